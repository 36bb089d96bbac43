package localproc

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// Tail is an io.Writer that keeps the last Max bytes written, for error
// messages about a server that failed. It is safe for concurrent use.
type Tail struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of p; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - max(t.Max, 0); over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns what the tail holds.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// FileTail returns at most the last max bytes of the file at path that lie
// at or after offset from (for error messages about one start attempt), or
// a note in parentheses if the file cannot be read.
func FileTail(path string, max, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	start := from
	if st, err := f.Stat(); err == nil && st.Size()-max > start {
		start = st.Size() - max
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return fmt.Sprintf("%s(log: %v)", b, err)
	}
	return string(b)
}
