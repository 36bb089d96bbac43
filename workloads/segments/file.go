package segments

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// fileSizes are file sizes in bytes: [128, 256, 384] KiB → [512, 768, 1024] KiB
// is the file-size instability scenario.
var fileSizes = []int{128 << 10, 256 << 10, 384 << 10, 512 << 10, 768 << 10, 1024 << 10}

func init() {
	Register(Info{
		Name:  "readFile",
		Unit:  "bytes",
		Sizes: fileSizes,
		Needs: []string{"dir"},
		New: func(_ context.Context, size int, env Env) (Instance, error) {
			return newReadFileSeg(size, env)
		},
	})
	Register(Info{
		Name:  "writeFile",
		Unit:  "bytes",
		Sizes: fileSizes,
		Needs: []string{"dir"},
		New: func(_ context.Context, size int, env Env) (Instance, error) {
			return newWriteFileSeg(size, env)
		},
	})
}

// checkDir reports whether dir exists and is a directory.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("scratch directory %s: not a directory", dir)
	}
	return nil
}

// readFileSeg reads a file of random bytes written at setup (Sizeless'
// readFile) and checks its length and checksum per request. The file lives
// in Env.Dir under a unique name carrying the instance and seed; Close
// removes it.
type readFileSeg struct {
	path string
	size int
	sum  uint64
}

func newReadFileSeg(size int, env Env) (readFileSeg, error) {
	if err := checkMax(size, maxPayloadBytes, "bytes"); err != nil {
		return readFileSeg{}, err
	}
	if err := checkDir(env.Dir); err != nil {
		return readFileSeg{}, err
	}
	data := genBytes(inputRand(env, "readFile"), size)
	f, err := os.CreateTemp(env.Dir, fmt.Sprintf("aware-readFile-i%d-s%d-*.bin", env.Instance, env.Seed))
	if err != nil {
		return readFileSeg{}, fmt.Errorf("create input file: %w", err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return readFileSeg{}, errors.Join(fmt.Errorf("write input file %s: %w", f.Name(), werr), removeIfExists(f.Name()))
	}
	return readFileSeg{path: f.Name(), size: size, sum: digest(data)}, nil
}

func (s readFileSeg) Run(ctx context.Context) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return Result{}, fmt.Errorf("readFile: %w", err)
	}
	if len(data) != s.size {
		return Result{}, fmt.Errorf("readFile %s: read %d bytes, want %d", s.path, len(data), s.size)
	}
	sum := digest(data)
	if sum != s.sum {
		return Result{}, fmt.Errorf("readFile %s: checksum %#x, want %#x (file changed since setup)", s.path, sum, s.sum)
	}
	return Result{BytesIn: int64(s.size), Items: 1, Checksum: sum}, nil
}

// Close removes the input file; closing twice is not an error.
func (s readFileSeg) Close(context.Context) error { return removeIfExists(s.path) }

// writeFileSeg writes a file of random bytes per request and removes it
// (Sizeless' writeFile). Each request uses its own unique file in Env.Dir, so
// concurrent requests never collide. Like the original, which writes to /tmp,
// it does not fsync: the cost is the write into the page cache, not the disk.
type writeFileSeg struct {
	dir     string
	pattern string
	data    []byte
	sum     uint64
	// afterWrite, when set (by tests), is called with the path of the
	// written and closed file before it is removed.
	afterWrite func(path string) error
}

func newWriteFileSeg(size int, env Env) (writeFileSeg, error) {
	if err := checkMax(size, maxPayloadBytes, "bytes"); err != nil {
		return writeFileSeg{}, err
	}
	if err := checkDir(env.Dir); err != nil {
		return writeFileSeg{}, err
	}
	data := genBytes(inputRand(env, "writeFile"), size)
	return writeFileSeg{
		dir:     env.Dir,
		pattern: fmt.Sprintf("aware-writeFile-i%d-s%d-*.bin", env.Instance, env.Seed),
		data:    data,
		sum:     digest(data),
	}, nil
}

func (s writeFileSeg) Run(ctx context.Context) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	f, err := os.CreateTemp(s.dir, s.pattern)
	if err != nil {
		return Result{}, fmt.Errorf("writeFile: %w", err)
	}
	_, err = f.Write(s.data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && s.afterWrite != nil {
		err = s.afterWrite(f.Name())
	}
	if rerr := removeIfExists(f.Name()); err == nil {
		err = rerr
	}
	if err != nil {
		return Result{}, fmt.Errorf("writeFile %s: %w", f.Name(), err)
	}
	return Result{BytesOut: int64(len(s.data)), Items: 1, Checksum: s.sum}, nil
}

func (writeFileSeg) Close(context.Context) error { return nil }

// removeIfExists removes path; a missing file is not an error.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
