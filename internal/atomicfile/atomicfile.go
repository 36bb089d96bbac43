// Package atomicfile writes files that survive a crash whole: a reader, or
// the process started after a crash, finds either the old file or the whole
// new one under the name, never a partial or empty one.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Write writes data to path with permissions perm, atomically: see
// WriteWith.
func Write(path string, data []byte, perm os.FileMode) error {
	return WriteWith(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith writes path atomically with what fill writes: into a temporary
// file in path's directory (".<name>.tmp-<random>", so that concurrent
// writers and directory listings by suffix never meet it), which is given
// perm, synced, closed and renamed over path; the directory is then synced
// so that the rename itself is durable (a file system that cannot sync a
// directory, EINVAL or ENOTSUP, is not an error). On an error before the
// rename, fill's included, the temporary file is removed and an existing
// file at path is left as it was; a failing directory sync is reported
// with the new file already in place. A crash mid-write can leave a
// temporary file behind, never a partial file at path.
func WriteWith(path string, perm os.FileMode, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close() // a second Close after the first reports an error we do not need
			_ = os.Remove(f.Name())
		}
	}()
	if err = fill(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = syncFile(f); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = syncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// syncFile is replaced in tests to simulate a failing disk.
var syncFile = (*os.File).Sync

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
