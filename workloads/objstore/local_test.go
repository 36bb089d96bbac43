package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/objstore"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

var _ segments.ObjectStore = (*objstore.Client)(nil)

// shared is one gateway for the whole package, started on first use.
var shared struct {
	once  sync.Once
	dir   string
	local *objstore.Local
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.local != nil {
		if err := shared.local.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// local returns the shared gateway, skipping the test if versitygw is not
// installed (failing instead when CI=true).
func local(t *testing.T) *objstore.Local {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "objstore-test-")
		if shared.err == nil {
			shared.local, shared.err = objstore.StartLocal(context.Background(), shared.dir)
		}
	})
	if errors.Is(shared.err, objstore.ErrNoBinary) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", shared.err)
	}
	require.NoError(t, shared.err)
	return shared.local
}

func connect(t *testing.T, opts ...objstore.Option) *objstore.Client {
	t.Helper()
	c, err := objstore.Connect(t.Context(), local(t).Config(), opts...)
	require.NoError(t, err)
	return c
}

// content is a deterministic pseudo-random stream of n bytes.
func content(seed uint64, n int64) io.Reader {
	var key [32]byte
	key[0] = byte(seed)
	return io.LimitReader(rand.NewChaCha8(key), n)
}

func crcOf(t *testing.T, r io.Reader) (uint64, int64) {
	t.Helper()
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	n, err := io.Copy(h, r)
	require.NoError(t, err)
	return h.Sum64(), n
}

func TestRoundTrip(t *testing.T) {
	c := connect(t)
	ctx := t.Context()
	for _, size := range []int64{0, 1, 128 << 10, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			key := fmt.Sprintf("roundtrip/%d", size)
			want, _ := crcOf(t, content(1, size))
			require.NoError(t, c.Put(ctx, key, content(1, size), size))

			rc, err := c.Get(ctx, key)
			require.NoError(t, err)
			got, n := crcOf(t, rc)
			require.NoError(t, rc.Close())
			assert.Equal(t, size, n)
			assert.Equal(t, want, got)

			require.NoError(t, c.Delete(ctx, key))
			_, err = c.Get(ctx, key)
			require.ErrorIs(t, err, fs.ErrNotExist)
			assert.ErrorContains(t, err, key)
			require.NoError(t, c.Delete(ctx, key), "deleting a missing key is not an error")
		})
	}
}

func TestPutOverwrites(t *testing.T) {
	c := connect(t)
	ctx := t.Context()
	require.NoError(t, c.Put(ctx, "overwrite", bytes.NewReader([]byte("first")), 5))
	require.NoError(t, c.Put(ctx, "overwrite", bytes.NewReader([]byte("second!")), -1))
	rc, err := c.Get(ctx, "overwrite")
	require.NoError(t, err)
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	assert.Equal(t, "second!", string(b))
	require.NoError(t, c.Delete(ctx, "overwrite"))
}

func TestPutShortReaderFails(t *testing.T) {
	c := connect(t, objstore.WithMaxRetries(0))
	err := c.Put(t.Context(), "short", bytes.NewReader([]byte("abc")), 10)
	require.Error(t, err)
	assert.ErrorContains(t, err, `put "short"`)
}

// TestStreamUnknownSize uploads objects of unknown size through a pipe, both
// small (a single PUT) and spanning several parts (multipart), and checks
// that memory stays far below the object size.
func TestStreamUnknownSize(t *testing.T) {
	const partSize = 5 << 20
	c := connect(t, objstore.WithPartSize(partSize))
	ctx := t.Context()
	for _, size := range []int64{300 << 10, 2 << 20, 8*partSize + 12345} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			key := fmt.Sprintf("stream/%d", size)
			want, _ := crcOf(t, content(2, size))

			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			pr, pw := io.Pipe()
			go func() {
				_, err := io.Copy(pw, content(2, size))
				pw.CloseWithError(err)
			}()
			require.NoError(t, c.Put(ctx, key, pr, -1))
			rc, err := c.Get(ctx, key)
			require.NoError(t, err)
			got, n := crcOf(t, rc)
			require.NoError(t, rc.Close())
			runtime.ReadMemStats(&after)

			assert.Equal(t, size, n)
			assert.Equal(t, want, got)
			// Put holds one part at a time (plus a read-ahead of at most
			// 1 MiB), never the whole object.
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("streamed %d bytes up and down, allocating %d bytes", size, alloc)
			if size > 3*partSize {
				assert.Less(t, alloc, uint64(size/2), "streaming %d bytes allocated %d bytes", size, alloc)
			}
			require.NoError(t, c.Delete(ctx, key))
		})
	}
}

func TestStreamReaderErrorAborts(t *testing.T) {
	c := connect(t, objstore.WithMaxRetries(0))
	boom := errors.New("boom")
	r := io.MultiReader(content(3, 6<<20), errReader{boom})
	err := c.Put(t.Context(), "aborted", r, -1)
	require.ErrorIs(t, err, boom)
	_, err = c.Get(t.Context(), "aborted")
	require.ErrorIs(t, err, fs.ErrNotExist, "a failed upload leaves no object")
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestConcurrentClients(t *testing.T) {
	c := connect(t)
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			key := fmt.Sprintf("concurrent/%d", i)
			size := int64(64<<10 + i)
			if err := c.Put(ctx, key, content(uint64(i), size), size); err != nil {
				errs <- err
				return
			}
			rc, err := c.Get(ctx, key)
			if err != nil {
				errs <- err
				return
			}
			n, err := io.Copy(io.Discard, rc)
			rc.Close()
			if err == nil && n != size {
				err = fmt.Errorf("%s: read %d bytes, want %d", key, n, size)
			}
			if err == nil {
				err = c.Delete(ctx, key)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

func TestConnectCreatesBucket(t *testing.T) {
	cfg := local(t).Config()
	cfg.Bucket = "aware-created"
	c1, err := objstore.Connect(t.Context(), cfg)
	require.NoError(t, err)
	assert.Equal(t, "aware-created", c1.Bucket())
	require.DirExists(t, local(t).Dir()+"/data/aware-created")
	_, err = objstore.Connect(t.Context(), cfg)
	require.NoError(t, err, "connecting to an existing bucket")
}

func TestConnectBadCredentials(t *testing.T) {
	cfg := local(t).Config()
	cfg.SecretKey = "wrong-secret"
	_, err := objstore.Connect(t.Context(), cfg, objstore.WithMaxRetries(0))
	require.Error(t, err)
	assert.ErrorContains(t, err, "credentials rejected")
	assert.ErrorContains(t, err, cfg.Endpoint)

	cfg = local(t).Config()
	cfg.AccessKey = "nobody"
	_, err = objstore.Connect(t.Context(), cfg, objstore.WithMaxRetries(0))
	assert.ErrorContains(t, err, "credentials rejected")
}

func TestConnectUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cfg := objstore.Config{Endpoint: addr, AccessKey: "a", SecretKey: "b", Bucket: "aware", Region: "us-east-1"}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = objstore.Connect(ctx, cfg, objstore.WithMaxRetries(0))
	require.Error(t, err)
	assert.ErrorContains(t, err, "object store "+addr)
	assert.ErrorContains(t, err, "check bucket")
}

func TestStartLocalStop(t *testing.T) {
	local(t) // skip or fail like the others when versitygw is missing
	l, err := objstore.StartLocal(t.Context(), t.TempDir())
	require.NoError(t, err)
	addr := l.Config().Endpoint
	c, err := objstore.Connect(t.Context(), l.Config())
	require.NoError(t, err)
	require.NoError(t, c.Put(t.Context(), "k", bytes.NewReader([]byte("v")), 1))

	require.NoError(t, l.Stop())
	require.NoError(t, l.Stop(), "stop is idempotent")
	_, err = net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err, "the gateway no longer listens")
}

func TestStartLocalMissingBinary(t *testing.T) {
	t.Setenv("AWARE_VERSITYGW", "/nonexistent/versitygw")
	_, err := objstore.StartLocal(t.Context(), t.TempDir())
	require.ErrorIs(t, err, objstore.ErrNoBinary)
	assert.ErrorContains(t, err, "AWARE_VERSITYGW=/nonexistent/versitygw")
}

func TestStartLocalReportsServerOutput(t *testing.T) {
	// A stand-in gateway that fails at once: the error carries its output.
	bin := t.TempDir() + "/versitygw"
	script := "#!/bin/sh\necho \"fatal: simulated failure\" >&2\nexit 3\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	t.Setenv("AWARE_VERSITYGW", bin)
	_, err := objstore.StartLocal(t.Context(), t.TempDir())
	require.Error(t, err)
	assert.ErrorContains(t, err, "exited during start")
	assert.ErrorContains(t, err, "fatal: simulated failure")
}

func TestList(t *testing.T) {
	c := connect(t)
	ctx := t.Context()
	keys := []string{"list/b/2.json", "list/a/1.json", "list/a/sub/3.json", "listing/other.json"}
	for _, k := range keys {
		require.NoError(t, c.Put(ctx, k, strings.NewReader(k), int64(len(k))))
	}
	got, err := c.List(ctx, "list/")
	require.NoError(t, err)
	assert.Equal(t, []string{"list/a/1.json", "list/a/sub/3.json", "list/b/2.json"}, got, "every level below the prefix, sorted; not list*")
	got, err = c.List(ctx, "list/a/")
	require.NoError(t, err)
	assert.Equal(t, []string{"list/a/1.json", "list/a/sub/3.json"}, got)
	got, err = c.List(ctx, "nothing/")
	require.NoError(t, err)
	assert.Empty(t, got)
}
