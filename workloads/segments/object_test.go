package segments

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/database"
	"github.com/aware-autoscaler/aware/workloads/objstore"
)

// services are the real object store and database of the integration
// tests, each started once for the package on first use and stopped by
// TestMain.
var services struct {
	objOnce sync.Once
	objDir  string
	obj     *objstore.Local
	objects *objstore.Client
	objErr  error

	dbOnce sync.Once
	dbDir  string
	pg     *database.Local
	db     *database.DB
	dbErr  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := stopServices(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func stopServices() error {
	s := &services
	var errs []error
	if s.db != nil {
		s.db.Close()
	}
	if s.pg != nil {
		errs = append(errs, s.pg.Stop())
	}
	if s.obj != nil {
		errs = append(errs, s.obj.Stop())
	}
	for _, d := range []string{s.objDir, s.dbDir} {
		if d != "" {
			errs = append(errs, os.RemoveAll(d))
		}
	}
	return errors.Join(errs...)
}

// skipIfMissing skips the test when err says a server binary is missing,
// unless CI=true, where every binary must be installed.
func skipIfMissing(t testing.TB, err error) {
	t.Helper()
	if (errors.Is(err, objstore.ErrNoBinary) || errors.Is(err, database.ErrNoBinary)) && os.Getenv("CI") != "true" {
		t.Skipf("skipping integration test: %v", err)
	}
	require.NoError(t, err)
}

// realObjects returns a client of the package's versitygw gateway.
func realObjects(t testing.TB) *objstore.Client {
	t.Helper()
	s := &services
	s.objOnce.Do(func() {
		ctx := context.Background()
		if s.objDir, s.objErr = os.MkdirTemp("", "segments-s3-"); s.objErr != nil {
			return
		}
		if s.obj, s.objErr = objstore.StartLocal(ctx, s.objDir); s.objErr != nil {
			return
		}
		s.objects, s.objErr = objstore.Connect(ctx, s.obj.Config())
	})
	skipIfMissing(t, s.objErr)
	return s.objects
}

// readAll reads a whole object from the real store.
func readAll(t *testing.T, store ObjectStore, key string) []byte {
	t.Helper()
	rc, err := store.Get(t.Context(), key)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return b
}

func TestObjectSegmentsRealStore(t *testing.T) {
	store := realObjects(t)
	ctx := t.Context()
	for _, name := range objectSegmentNames {
		for _, size := range []int{objectSizes[0], objectSizes[len(objectSizes)-1]} {
			t.Run(fmt.Sprintf("%s/%d", name, size), func(t *testing.T) {
				env := Env{Objects: store, Seed: 11, Instance: 3}
				inst := newObjectSeg(t, name, size, env)
				// The same work against the in-memory fake is the reference.
				fake := newObjectSeg(t, name, size, Env{Objects: &MemObjects{}, Seed: 11, Instance: 3})
				defer fake.Close(ctx)
				want, err := fake.Run(ctx)
				require.NoError(t, err)
				for range 2 {
					got, err := inst.Run(ctx)
					require.NoError(t, err)
					assert.Equal(t, want, got)
				}
				require.NoError(t, inst.Close(ctx))
			})
		}
	}
}

func TestObjectStreamRealStoreOutput(t *testing.T) {
	store := realObjects(t)
	ctx := t.Context()
	inst := newObjectSeg(t, "objectStream", 512<<10, Env{Objects: store, Seed: 2})
	seg := inst.(*objectStreamSeg)
	r, err := inst.Run(ctx)
	require.NoError(t, err)

	src := readAll(t, store, seg.src)
	gz := readAll(t, store, seg.outs[0])
	assert.Equal(t, int64(len(gz)), r.BytesOut)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, src, out, "the stored output is the gzipped input")

	require.NoError(t, inst.Close(ctx))
	for _, k := range append([]string{seg.src}, seg.outs[:]...) {
		_, err := store.Get(ctx, k)
		assert.ErrorIs(t, err, fs.ErrNotExist, "close removed %s", k)
	}
}

func TestObjectWriteRealStoreConcurrent(t *testing.T) {
	store := realObjects(t)
	ctx := t.Context()
	inst := newObjectSeg(t, "objectWrite", 128<<10, Env{Objects: store, Seed: 6})
	seg := inst.(*objectWriteSeg)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for range 3 {
				_, err := inst.Run(ctx)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	for _, k := range seg.keys {
		assert.Equal(t, seg.data, readAll(t, store, k), k)
	}
	require.NoError(t, inst.Close(ctx))
	for _, k := range seg.keys {
		_, err := store.Get(ctx, k)
		assert.ErrorIs(t, err, fs.ErrNotExist)
	}
}

// BenchmarkServiceSegments runs the object and db segments against the
// package's real versitygw and PostgreSQL at each of their sizes, e.g.
// dbWrite/size=64 (BenchmarkSegments skips them).
func BenchmarkServiceSegments(b *testing.B) {
	ctx := context.Background()
	for _, name := range append(slices.Clone(objectSegmentNames), "dbRead", "dbWrite") {
		info, _ := Lookup(name)
		for _, size := range info.Sizes {
			b.Run(fmt.Sprintf("%s/size=%d", name, size), func(b *testing.B) {
				env := Env{Objects: realObjects(b), DB: realDB(b), Seed: 1}
				inst, err := New(ctx, Spec{Name: name, Size: size}, env)
				if err != nil {
					b.Fatal(err)
				}
				defer func() {
					if err := inst.Close(ctx); err != nil {
						b.Error(err)
					}
				}()
				r, err := inst.Run(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if n := max(r.BytesIn, r.BytesOut); n > 0 {
					b.SetBytes(n)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := inst.Run(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
