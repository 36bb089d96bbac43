//go:build unix

package trajectory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// lockFile is the name of the lock in a store's directory.
const lockFile = "LOCK"

// lockDir takes an exclusive flock on dir/LOCK, failing with ErrLocked if
// another open file description (this process or another) holds it. The
// lock lasts until the returned file is closed or the process exits.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder, _ := os.ReadFile(path)
			return nil, fmt.Errorf("%w: %s (held by pid %s)", ErrLocked, path, trimNL(holder))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The pid is for people; the flock is the lock.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

func trimNL(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "?"
	}
	return string(b)
}

// unlockDir releases a lock taken by lockDir.
func unlockDir(f *os.File) error { return f.Close() }
