package trace

import (
	"errors"
	"fmt"
	"io"
	"time"
)

const (
	// maxTokenLen bounds one value's text in a count file.
	maxTokenLen = 64
	// maxExactCount is the largest count a float64 holds exactly (2^53).
	maxExactCount = 1 << 53
)

// ReadCounts reads a per-second count trace: non-negative integers separated
// by any ASCII white space (spaces, tabs, newlines), one per second, possibly
// all on one line, gzip-compressed or not. name is used in error messages,
// which read like `nasa.txt.gz:1:35: value 17: "abc" is not a non-negative
// integer` (file, line, byte column, 1-based index of the value in the file).
func ReadCounts(r io.Reader, name string) (Series, error) {
	br, err := plain(r, name)
	if err != nil {
		return Series{}, err
	}
	s := Series{Name: name, Step: time.Second}
	var (
		tok       [maxTokenLen]byte
		n         int  // bytes in tok
		long      bool // the current token is longer than tok
		line, col = 1, 0
		tokCol    int
	)
	flush := func() error {
		if n == 0 {
			return nil
		}
		idx := len(s.Values) + 1
		if long {
			return fmt.Errorf("%s:%d:%d: value %d: %q... is longer than %d bytes", name, line, tokCol, idx, tok[:16], maxTokenLen)
		}
		v, ok := parseCount(tok[:n])
		if !ok {
			return fmt.Errorf("%s:%d:%d: value %d: %q is not a non-negative integer below 2^53", name, line, tokCol, idx, tok[:n])
		}
		s.Values = append(s.Values, v)
		n = 0
		return nil
	}
	buf := make([]byte, readBufferSize)
	for {
		m, err := br.Read(buf)
		for _, c := range buf[:m] {
			col++
			switch c {
			case ' ', '\t', '\r', '\v', '\f', '\n':
				if err := flush(); err != nil {
					return Series{}, err
				}
				if c == '\n' {
					line, col = line+1, 0
				}
			default:
				if n == 0 && !long {
					tokCol = col
				}
				if n < maxTokenLen {
					tok[n] = c
					n++
				} else {
					long = true
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Series{}, fmt.Errorf("%s:%d: read: %w", name, line, err)
		}
	}
	if err := flush(); err != nil {
		return Series{}, err
	}
	if len(s.Values) == 0 {
		return Series{}, fmt.Errorf("%s: no values: want white-space separated per-second counts", name)
	}
	return s, nil
}

// parseCount parses a decimal non-negative integer no larger than 2^53.
func parseCount(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
		if v > maxExactCount {
			return 0, false
		}
	}
	return float64(v), true
}
