package segments

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc64"
	"hash/fnv"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// objectSizes are object sizes in bytes, 128 KiB to 1 MiB like the files.
var objectSizes = []int{128 << 10, 256 << 10, 384 << 10, 512 << 10, 768 << 10, 1024 << 10}

// objectRing is how many keys an objectWrite or objectStream instance cycles
// through: its storage is bounded by objectRing objects.
const objectRing = 4

func init() {
	Register(Info{
		Name:  "objectRead",
		Unit:  "bytes",
		Sizes: objectSizes,
		Needs: []string{"objects"},
		New: func(ctx context.Context, size int, env Env) (Instance, error) {
			return newObjectRead(ctx, size, env)
		},
	})
	Register(Info{
		Name:  "objectWrite",
		Unit:  "bytes",
		Sizes: objectSizes,
		Needs: []string{"objects"},
		New: func(_ context.Context, size int, env Env) (Instance, error) {
			return newObjectWrite(size, env)
		},
	})
	Register(Info{
		Name:  "objectStream",
		Unit:  "bytes (uncompressed)",
		Sizes: objectSizes,
		Needs: []string{"objects"},
		New: func(ctx context.Context, size int, env Env) (Instance, error) {
			return newObjectStream(ctx, size, env)
		},
	})
}

// ownerTag identifies this process among those sharing an object store or
// a database: replicas of one application have the same seed and instance
// numbers, and one replica's Close must not delete another's objects or
// tables. It names things, it does not shape results, so it is derived from
// the host, the process and the start time rather than from the seed.
var ownerTag = sync.OnceValue(func() string {
	h := fnv.New64a()
	host, _ := os.Hostname()
	_, _ = fmt.Fprintf(h, "%s/%d/%d", host, os.Getpid(), time.Now().UnixNano())
	return fmt.Sprintf("%012x", h.Sum64()>>16)
})

// serviceSeq numbers the instances of this process that use a service, so
// that two instances with the same seed and instance number do not collide.
var serviceSeq atomic.Uint64

// serviceName is a unique name for one instance's objects or table, built
// from numbers only: kind_s<seed>_i<instance>_<owner>_<n>.
func serviceName(kind string, env Env) string {
	return fmt.Sprintf("%s_s%016x_i%d_%s_%d", kind, uint64(env.Seed), env.Instance, ownerTag(), serviceSeq.Add(1))
}

// objectPrefix is the key prefix of one instance's objects.
func objectPrefix(name string, env Env) string {
	return "aware/" + serviceName(name, env) + "/"
}

// hashCount hashes and counts what passes through it.
type hashCount struct {
	h hash.Hash64
	n int64
}

func newHashCount() *hashCount { return &hashCount{h: crc64.New(crcTable)} }

func (c *hashCount) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

// readObject reads key fully, returning its length and digest.
func readObject(ctx context.Context, store ObjectStore, key string) (int64, uint64, error) {
	rc, err := store.Get(ctx, key)
	if err != nil {
		return 0, 0, err
	}
	hc := newHashCount()
	_, err = io.Copy(hc, rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read object %q: %w", key, err)
	}
	return hc.n, hc.h.Sum64(), nil
}

// objectReadSeg downloads an object uploaded at setup (Sizeless' S3 read)
// and checks its length and checksum per request. Close deletes it.
type objectReadSeg struct {
	store ObjectStore
	key   string
	size  int64
	sum   uint64
}

func newObjectRead(ctx context.Context, size int, env Env) (*objectReadSeg, error) {
	if err := checkMax(size, maxPayloadBytes, "bytes"); err != nil {
		return nil, err
	}
	data := genBytes(inputRand(env, "objectRead"), size)
	s := &objectReadSeg{store: env.Objects, key: objectPrefix("objectRead", env) + "input",
		size: int64(size), sum: digest(data)}
	if err := s.store.Put(ctx, s.key, bytes.NewReader(data), int64(size)); err != nil {
		return nil, fmt.Errorf("upload input: %w", err)
	}
	return s, nil
}

func (s *objectReadSeg) Run(ctx context.Context) (Result, error) {
	n, sum, err := readObject(ctx, s.store, s.key)
	if err != nil {
		return Result{}, fmt.Errorf("objectRead: %w", err)
	}
	if n != s.size || sum != s.sum {
		return Result{}, fmt.Errorf("objectRead %q: read %d bytes with checksum %#x, want %d bytes with %#x (object changed since setup)",
			s.key, n, sum, s.size, s.sum)
	}
	return Result{BytesIn: n, Items: 1, Checksum: sum}, nil
}

func (s *objectReadSeg) Close(ctx context.Context) error { return s.store.Delete(ctx, s.key) }

// objectWriteSeg uploads an object of random bytes per request (Sizeless'
// S3 write). Requests cycle through objectRing keys: each still writes a
// whole new object (one PUT, as in the original), but storage stays bounded
// at objectRing×Size per instance without a DELETE per request, which would
// double the requests and change the segment's cost. Close deletes the ring.
type objectWriteSeg struct {
	store ObjectStore
	keys  [objectRing]string
	data  []byte
	sum   uint64
	next  atomic.Uint64
}

func newObjectWrite(size int, env Env) (*objectWriteSeg, error) {
	if err := checkMax(size, maxPayloadBytes, "bytes"); err != nil {
		return nil, err
	}
	data := genBytes(inputRand(env, "objectWrite"), size)
	s := &objectWriteSeg{store: env.Objects, data: data, sum: digest(data)}
	prefix := objectPrefix("objectWrite", env)
	for i := range s.keys {
		s.keys[i] = prefix + "out-" + strconv.Itoa(i)
	}
	return s, nil
}

func (s *objectWriteSeg) Run(ctx context.Context) (Result, error) {
	key := s.keys[(s.next.Add(1)-1)%objectRing]
	if err := s.store.Put(ctx, key, bytes.NewReader(s.data), int64(len(s.data))); err != nil {
		return Result{}, fmt.Errorf("objectWrite: %w", err)
	}
	return Result{BytesOut: int64(len(s.data)), Items: 1, Checksum: s.sum}, nil
}

func (s *objectWriteSeg) Close(ctx context.Context) error {
	return deleteAll(ctx, s.store, s.keys[:])
}

func deleteAll(ctx context.Context, store ObjectStore, keys []string) error {
	var errs []error
	for _, k := range keys {
		errs = append(errs, store.Delete(ctx, k))
	}
	return errors.Join(errs...)
}

// errUploadEnded stops the compressor when the upload ended early.
var errUploadEnded = errors.New("upload ended before the stream")

// objectStreamSeg is Sizeless' stream segment: per request it streams a
// text object uploaded at setup from the store through gzip and uploads
// the result as a stream of unknown length (io.Pipe), so the segment never
// holds either object in memory (the store's client may buffer up to one
// multipart part). Outputs cycle through objectRing keys like objectWrite;
// Close deletes the input and the outputs.
type objectStreamSeg struct {
	store ObjectStore
	src   string
	outs  [objectRing]string
	size  int64
	sum   uint64
	next  atomic.Uint64
}

func newObjectStream(ctx context.Context, size int, env Env) (*objectStreamSeg, error) {
	if err := checkMax(size, maxPayloadBytes, "bytes"); err != nil {
		return nil, err
	}
	text := genLorem(inputRand(env, "objectStream"), size, true)
	prefix := objectPrefix("objectStream", env)
	s := &objectStreamSeg{store: env.Objects, src: prefix + "input", size: int64(size), sum: digest(text)}
	for i := range s.outs {
		s.outs[i] = prefix + "out-" + strconv.Itoa(i) + ".gz"
	}
	if err := s.store.Put(ctx, s.src, bytes.NewReader(text), int64(size)); err != nil {
		return nil, fmt.Errorf("upload input: %w", err)
	}
	return s, nil
}

func (s *objectStreamSeg) Run(ctx context.Context) (Result, error) {
	dst := s.outs[(s.next.Add(1)-1)%objectRing]
	rc, err := s.store.Get(ctx, s.src)
	if err != nil {
		return Result{}, fmt.Errorf("objectStream: %w", err)
	}
	defer rc.Close()
	in, out := newHashCount(), newHashCount()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		gw := gzipWriters.Get().(*gzip.Writer)
		gw.Reset(io.MultiWriter(pw, out))
		_, err := io.Copy(gw, io.TeeReader(rc, in))
		if err == nil {
			err = gw.Close()
		}
		gw.Reset(io.Discard)
		gzipWriters.Put(gw)
		pw.CloseWithError(err) // nil: the upload sees EOF
		done <- err
	}()
	perr := s.store.Put(ctx, dst, pr, -1)
	pr.CloseWithError(errUploadEnded) // unblocks the compressor if Put stopped early
	gerr := <-done
	switch {
	case gerr != nil && !errors.Is(gerr, errUploadEnded):
		return Result{}, fmt.Errorf("objectStream %q → %q: %w", s.src, dst, gerr)
	case perr != nil:
		return Result{}, fmt.Errorf("objectStream: %w", perr)
	case gerr != nil:
		return Result{}, fmt.Errorf("objectStream %q: the store ended the upload before the stream ended", dst)
	case in.n != s.size || in.h.Sum64() != s.sum:
		return Result{}, fmt.Errorf("objectStream %q: read %d bytes with checksum %#x, want %d bytes with %#x (object changed since setup)",
			s.src, in.n, in.h.Sum64(), s.size, s.sum)
	}
	return Result{BytesIn: in.n, BytesOut: out.n, Items: 1, Checksum: out.h.Sum64()}, nil
}

func (s *objectStreamSeg) Close(ctx context.Context) error {
	return deleteAll(ctx, s.store, append([]string{s.src}, s.outs[:]...))
}
