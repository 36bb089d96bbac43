package segments

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemObjects(t *testing.T) {
	ctx := t.Context()
	var m MemObjects
	require.NoError(t, m.Put(ctx, "b", strings.NewReader("hello"), 5))
	require.NoError(t, m.Put(ctx, "a", strings.NewReader("streamed"), -1))
	assert.Equal(t, []string{"a", "b"}, m.Keys())

	rc, err := m.Get(ctx, "b")
	require.NoError(t, err)
	got, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	assert.Equal(t, "hello", string(got))

	require.NoError(t, m.Put(ctx, "b", strings.NewReader("replaced"), 8))
	data, ok := m.Object("b")
	require.True(t, ok)
	assert.Equal(t, "replaced", string(data))
	data[0] = 'X'
	data, _ = m.Object("b")
	assert.Equal(t, "replaced", string(data), "Object returns a copy")

	require.NoError(t, m.Delete(ctx, "b"))
	require.NoError(t, m.Delete(ctx, "b"), "deleting a missing key succeeds, as in S3")
	_, err = m.Get(ctx, "b")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, ok = m.Object("b")
	assert.False(t, ok)
}

func TestMemObjectsErrors(t *testing.T) {
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		op   func(*MemObjects) error
		want string
		is   error
	}{
		{name: "short content", op: func(m *MemObjects) error {
			return m.Put(t.Context(), "k", strings.NewReader("abc"), 4)
		}, want: `put "k": read 3 bytes, size says 4`},
		{name: "bad size", op: func(m *MemObjects) error {
			return m.Put(t.Context(), "k", strings.NewReader("abc"), -2)
		}, want: "size -2"},
		{name: "reader error", op: func(m *MemObjects) error {
			return m.Put(t.Context(), "k", io.MultiReader(strings.NewReader("a"), memErrReader{boom}), -1)
		}, is: boom},
		{name: "cancelled", op: func(m *MemObjects) error {
			return m.Put(cancelled, "k", strings.NewReader("abc"), 3)
		}, is: context.Canceled},
		{name: "injected", op: func(m *MemObjects) error {
			m.Fail = func(op, key string) error {
				if op == "delete" && key == "k" {
					return boom
				}
				return nil
			}
			return m.Delete(t.Context(), "k")
		}, is: boom, want: `delete "k"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &MemObjects{}
			err := tt.op(m)
			require.Error(t, err)
			if tt.want != "" {
				assert.ErrorContains(t, err, tt.want)
			}
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.Empty(t, m.Keys(), "a failed put stores nothing")
		})
	}
}

func TestMemObjectsConcurrent(t *testing.T) {
	var m MemObjects
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			key := fmt.Sprint("k", i%4)
			body := strings.Repeat("x", i)
			assert.NoError(t, m.Put(ctx, key, strings.NewReader(body), int64(i)))
			if rc, err := m.Get(ctx, key); err == nil {
				_, _ = io.Copy(io.Discard, rc)
			}
		})
	}
	wg.Wait()
	assert.Len(t, m.Keys(), 4)
}

type memErrReader struct{ err error }

func (e memErrReader) Read([]byte) (int, error) { return 0, e.err }

var objectSegmentNames = []string{"objectRead", "objectWrite", "objectStream"}

func TestObjectSegmentsRegistered(t *testing.T) {
	for _, name := range objectSegmentNames {
		info, ok := Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, []string{"objects"}, info.Needs)
		assert.Equal(t, objectSizes, info.Sizes)
		_, err := New(t.Context(), Spec{Name: name, Size: 1024}, Env{})
		assert.ErrorContains(t, err, "needs an object store")
		_, err = New(t.Context(), Spec{Name: name, Size: maxPayloadBytes + 1}, Env{Objects: &MemObjects{}})
		assert.ErrorContains(t, err, "exceeds the maximum")
	}
}

func newObjectSeg(t *testing.T, name string, size int, env Env) Instance {
	t.Helper()
	inst, err := New(t.Context(), Spec{Name: name, Size: size}, env)
	require.NoError(t, err)
	return inst
}

func TestObjectRead(t *testing.T) {
	ctx := t.Context()
	for _, size := range []int{1, objectSizes[0], objectSizes[len(objectSizes)-1]} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			m := &MemObjects{}
			inst := newObjectSeg(t, "objectRead", size, Env{Objects: m, Seed: 5, Instance: 1})
			require.Len(t, m.Keys(), 1, "the input is uploaded at setup")
			key := m.Keys()[0]
			data, _ := m.Object(key)
			require.Len(t, data, size)

			r, err := inst.Run(ctx)
			require.NoError(t, err)
			assert.Equal(t, Result{BytesIn: int64(size), Items: 1, Checksum: digest(data)}, r)
			r2, err := inst.Run(ctx)
			require.NoError(t, err)
			assert.Equal(t, r, r2)

			require.NoError(t, inst.Close(ctx))
			assert.Empty(t, m.Keys())
		})
	}
}

func TestObjectReadDetectsChanges(t *testing.T) {
	m := &MemObjects{}
	inst := newObjectSeg(t, "objectRead", 4096, Env{Objects: m, Seed: 1})
	key := m.Keys()[0]
	data, _ := m.Object(key)
	data[100] ^= 1
	require.NoError(t, m.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))))
	_, err := inst.Run(t.Context())
	require.ErrorContains(t, err, "object changed since setup")

	require.NoError(t, m.Delete(t.Context(), key))
	_, err = inst.Run(t.Context())
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestObjectSegmentsDeterministicAndSeparate(t *testing.T) {
	ctx := t.Context()
	for _, name := range objectSegmentNames {
		t.Run(name, func(t *testing.T) {
			m := &MemObjects{}
			run := func(env Env) Result {
				inst := newObjectSeg(t, name, 8192, env)
				t.Cleanup(func() { assert.NoError(t, inst.Close(context.Background())) })
				r, err := inst.Run(ctx)
				require.NoError(t, err)
				return r
			}
			a := run(Env{Objects: m, Seed: 1})
			b := run(Env{Objects: m, Seed: 1}) // same seed and instance: no collision
			c := run(Env{Objects: m, Seed: 2})
			assert.Equal(t, a, b, "same seed, same work")
			assert.NotEqual(t, a.Checksum, c.Checksum, "another seed, other content")
			for _, k := range m.Keys() {
				assert.True(t, strings.HasPrefix(k, "aware/"+name+"_s"), k)
			}
		})
	}
}

func TestObjectWrite(t *testing.T) {
	ctx := t.Context()
	m := &MemObjects{}
	const size = 64 << 10
	inst := newObjectSeg(t, "objectWrite", size, Env{Objects: m, Seed: 3})
	assert.Empty(t, m.Keys(), "nothing is uploaded at setup")
	var first Result
	for i := range 10 {
		r, err := inst.Run(ctx)
		require.NoError(t, err)
		if i == 0 {
			first = r
		}
		assert.Equal(t, first, r)
		assert.Len(t, m.Keys(), min(i+1, objectRing), "storage is bounded by the ring")
	}
	assert.Equal(t, int64(size), first.BytesOut)
	for _, k := range m.Keys() {
		data, _ := m.Object(k)
		assert.Len(t, data, size)
		assert.Equal(t, first.Checksum, digest(data), k)
	}
	require.NoError(t, inst.Close(ctx))
	assert.Empty(t, m.Keys())
}

// gunzip decompresses an object of the fake store.
func gunzip(t *testing.T, m *MemObjects, key string) []byte {
	t.Helper()
	gz, ok := m.Object(key)
	require.True(t, ok, key)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	return out
}

func TestObjectStream(t *testing.T) {
	ctx := t.Context()
	for _, size := range []int{1, objectSizes[0], objectSizes[len(objectSizes)-1]} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			m := &MemObjects{}
			inst := newObjectSeg(t, "objectStream", size, Env{Objects: m, Seed: 9, Instance: 2})
			require.Len(t, m.Keys(), 1)
			src := m.Keys()[0]
			text, _ := m.Object(src)

			r, err := inst.Run(ctx)
			require.NoError(t, err)
			var outs []string
			for _, k := range m.Keys() {
				if k != src {
					outs = append(outs, k)
				}
			}
			require.Len(t, outs, 1)
			gz, _ := m.Object(outs[0])
			assert.Equal(t, Result{BytesIn: int64(size), BytesOut: int64(len(gz)), Items: 1, Checksum: digest(gz)}, r)
			assert.Equal(t, text, gunzip(t, m, outs[0]), "the output is the gzipped input")
			if size > 1<<10 {
				assert.Less(t, len(gz), size/2, "text compresses")
			}
			for range 2 * objectRing {
				r2, err := inst.Run(ctx)
				require.NoError(t, err)
				assert.Equal(t, r, r2, "gzip output is deterministic")
			}
			assert.Len(t, m.Keys(), 1+objectRing, "outputs are bounded by the ring")
			require.NoError(t, inst.Close(ctx))
			assert.Empty(t, m.Keys())
		})
	}
}

// partialStore accepts a put without reading all of it, which a correct
// store never does; the segment must notice.
type partialStore struct{ MemObjects }

func (p *partialStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if size >= 0 {
		return p.MemObjects.Put(ctx, key, r, size)
	}
	return p.MemObjects.Put(ctx, key, io.LimitReader(r, 10), -1)
}

func TestObjectStreamErrors(t *testing.T) {
	boom := errors.New("boom")
	failOutputs := func(op, key string) error {
		if op == "put" && strings.HasSuffix(key, ".gz") {
			return boom
		}
		return nil
	}
	failInput := func(op, key string) error {
		if op == "get" {
			return boom
		}
		return nil
	}
	tests := []struct {
		name  string
		store func(*MemObjects) ObjectStore
		want  string
	}{
		{name: "upload fails", store: func(m *MemObjects) ObjectStore { m.Fail = failOutputs; return m }, want: "boom"},
		{name: "download fails", store: func(m *MemObjects) ObjectStore { m.Fail = failInput; return m }, want: "boom"},
		{name: "input changed", store: func(m *MemObjects) ObjectStore {
			src := m.Keys()[0]
			require.NoError(t, m.Put(t.Context(), src, strings.NewReader("other"), 5))
			return m
		}, want: "object changed since setup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &MemObjects{}
			inst := newObjectSeg(t, "objectStream", 256<<10, Env{Objects: m, Seed: 4})
			seg := inst.(*objectStreamSeg)
			seg.store = tt.store(m)
			_, err := inst.Run(t.Context())
			require.ErrorContains(t, err, tt.want)
			m.Fail = nil
			require.NoError(t, inst.Close(t.Context()))
		})
	}

	t.Run("store stops reading", func(t *testing.T) {
		p := &partialStore{}
		inst := newObjectSeg(t, "objectStream", 256<<10, Env{Objects: p, Seed: 4})
		_, err := inst.Run(t.Context())
		require.Error(t, err)
		assert.ErrorContains(t, err, "the store ended the upload before the stream ended")
	})
}

func TestObjectSegmentsConcurrentRun(t *testing.T) {
	for _, name := range objectSegmentNames {
		t.Run(name, func(t *testing.T) {
			m := &MemObjects{}
			inst := newObjectSeg(t, name, 32<<10, Env{Objects: m, Seed: 8})
			want, err := inst.Run(t.Context())
			require.NoError(t, err)
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range 3 {
						r, err := inst.Run(t.Context())
						if assert.NoError(t, err) {
							assert.Equal(t, want, r)
						}
					}
				})
			}
			wg.Wait()
			require.NoError(t, inst.Close(t.Context()))
			assert.Empty(t, m.Keys())
		})
	}
}

func Example_objectStream() {
	ctx := context.Background()
	store := &MemObjects{}
	inst, err := New(ctx, Spec{Name: "objectStream", Size: 256 << 10}, Env{Objects: store, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inst.Close(ctx)
	r, err := inst.Run(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("read %d bytes, wrote less: %v; objects stored: %d\n", r.BytesIn, r.BytesOut < r.BytesIn, len(store.Keys()))
	// Output: read 262144 bytes, wrote less: true; objects stored: 2
}

func TestFormatChain(t *testing.T) {
	assert.Equal(t, "compress:131072→matMul:100", FormatChain([]Spec{{Name: "compress", Size: 131072}, {Name: "matMul", Size: 100}}))
	assert.Equal(t, "", FormatChain(nil))
}
