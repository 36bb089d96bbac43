//go:build !unix

package trajectory

import (
	"fmt"
	"os"
	"path/filepath"
)

const lockFile = "LOCK"

// lockDir creates dir/LOCK exclusively; a LOCK left by a crash must be
// removed by hand. (Unix systems use flock instead.)
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if os.IsExist(err) {
			return nil, fmt.Errorf("%w: %s exists (remove it if no store is running)", ErrLocked, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// unlockDir releases a lock taken by lockDir.
func unlockDir(f *os.File) error {
	err := f.Close()
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	return err
}
