package mirror_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study/mirror"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "s3://aware/studies/run-1", want: "s3://aware/studies/run-1"},
		{in: "s3://aware/studies/run-1/", want: "s3://aware/studies/run-1"},
		{in: "s3://aware", want: "s3://aware"},
		{in: "s3://aware/", want: "s3://aware"},
		{in: "/tmp/out", err: `want s3://BUCKET/PREFIX`},
		{in: "s3://Aware/x", err: `bucket "Aware"`},
		{in: "s3://a/x", err: `bucket "a"`},
		{in: "s3://aware//x", err: `segment ""`},
		{in: "s3://aware/x/../y", err: `segment ".."`},
		{in: "s3://aware/./y", err: `segment "."`},
		{in: `s3://aware/x\y`, err: "backslash"},
	} {
		u, err := mirror.ParseURL(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, u.String(), tc.in)
	}
	u, _ := mirror.ParseURL("s3://aware/p")
	assert.Equal(t, mirror.URL{Bucket: "aware", Prefix: "p/shard-1-of-2"}, u.Join(mirror.ShardName(1, 2)))
	root, _ := mirror.ParseURL("s3://aware")
	assert.Equal(t, mirror.URL{Bucket: "aware", Prefix: "shard-1-of-1"}, root.Join(mirror.ShardName(1, 1)))
	assert.True(t, mirror.IsURL("s3://aware/p"))
	assert.False(t, mirror.IsURL("out/shard-1"))
}

// write puts content at dir/rel.
func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func read(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(b)
}

func TestPushPull(t *testing.T) {
	ctx := context.Background()
	store := mirror.NewMemStore()
	u := mirror.URL{Bucket: "aware", Prefix: "run/shard-1-of-2"}
	dir := t.TempDir()
	write(t, dir, "serving/config.json", `{"a":1}`)
	write(t, dir, "serving/cells/c1.json", "cell 1")
	write(t, dir, "serving/cells/.c2.json.tmp-123", "half a cell")
	write(t, dir, ".hidden/x", "not sent")
	m := mirror.New(store, u, dir)
	n, err := m.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	keys, _ := store.List(ctx, "")
	assert.Equal(t, []string{"run/shard-1-of-2/serving/cells/c1.json", "run/shard-1-of-2/serving/config.json"}, keys, "no temporary or hidden file")

	n, err = m.Push(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing changed")
	write(t, dir, "serving/cells/c2.json", "cell 2")
	write(t, dir, "serving/config.json", `{"a":22}`)
	n, err = m.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "a new file and a changed one")
	b, _ := store.Object("run/shard-1-of-2/serving/config.json")
	assert.Equal(t, `{"a":22}`, string(b))

	// A new machine resumes: it pulls everything, and pushes nothing back.
	resumed := t.TempDir()
	write(t, resumed, "serving/cells/c1.json", "cell 1, recomputed here")
	m2 := mirror.New(store, u, resumed)
	n, err = m2.Pull(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "c1 is kept as the local folder has it")
	assert.Equal(t, "cell 2", read(t, resumed, "serving/cells/c2.json"))
	assert.Equal(t, "cell 1, recomputed here", read(t, resumed, "serving/cells/c1.json"))
	puts := store.Puts()
	n, err = m2.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only the local c1, which the store had another version of")
	assert.Equal(t, puts+1, store.Puts())

	// Pulling a folder that is not there yet is not an error.
	n, err = mirror.New(store, mirror.URL{Bucket: "aware", Prefix: "none"}, t.TempDir()).Pull(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	// Nor is pushing a folder not written yet.
	n, err = mirror.New(store, u, filepath.Join(t.TempDir(), "later")).Push(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestPushRetriesWhatFailed(t *testing.T) {
	ctx := context.Background()
	store := mirror.NewMemStore()
	dir := t.TempDir()
	write(t, dir, "a.json", "a")
	write(t, dir, "b.json", "b")
	write(t, dir, "c.json", "c")
	// Written in the order a, b, c.
	for i, name := range []string{"a.json", "b.json", "c.json"} {
		at := time.Date(2026, 11, 29, 10, 0, i, 0, time.UTC)
		require.NoError(t, os.Chtimes(filepath.Join(dir, name), at, at))
	}
	refuse := errors.New("503 slow down")
	store.FailPut = func(key string) error {
		if key == "p/b.json" {
			return refuse
		}
		return nil
	}
	m := mirror.New(store, mirror.URL{Bucket: "aware", Prefix: "p"}, dir)
	n, err := m.Push(ctx)
	assert.Equal(t, 1, n, "a, older than b, is sent")
	require.ErrorIs(t, err, refuse)
	assert.ErrorContains(t, err, "b.json")
	assert.ErrorContains(t, err, "1 newer files wait for the next push")
	_, ok := store.Object("p/c.json")
	assert.False(t, ok, "c, newer than b, waits: the store never holds c without b")
	store.FailPut = nil
	n, err = m.Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "b, tried again, then c")
	_, ok = store.Object("p/b.json")
	assert.True(t, ok)
}

func TestStartStop(t *testing.T) {
	ctx := context.Background()
	store := mirror.NewMemStore()
	u := mirror.URL{Bucket: "aware", Prefix: "p"}
	require.NoError(t, store.Put(ctx, "p/kept.json", readerOf("kept"), 4))
	dir := t.TempDir()
	// An hour between pushes: only Stop pushes in this test.
	m, err := mirror.Start(ctx, store, u, dir, mirror.WithEvery(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, "kept", read(t, dir, "kept.json"), "Start pulls")
	write(t, dir, "new.json", "new")
	require.NoError(t, m.Stop(ctx))
	b, ok := store.Object("p/new.json")
	require.True(t, ok, "Stop pushes")
	assert.Equal(t, "new", string(b))
	require.NoError(t, m.Stop(ctx), "twice")

	_, err = mirror.Start(ctx, store, u, dir, mirror.WithEvery(0))
	assert.ErrorContains(t, err, "push interval 0s: must be positive")
	require.NoError(t, store.Put(ctx, "bad/x/../y", readerOf("z"), 1))
	_, err = mirror.Start(ctx, store, mirror.URL{Bucket: "aware", Prefix: "bad"}, t.TempDir())
	assert.ErrorContains(t, err, `key "bad/x/../y"`)
}

// TestStartPushesPeriodically waits for a push it did not call; the
// deadline is generous and no other timer competes.
func TestStartPushesPeriodically(t *testing.T) {
	ctx := context.Background()
	store := mirror.NewMemStore()
	dir := t.TempDir()
	m, err := mirror.Start(ctx, store, mirror.URL{Bucket: "aware", Prefix: "p"}, dir, mirror.WithEvery(10*time.Millisecond))
	require.NoError(t, err)
	write(t, dir, "cell.json", "c")
	assert.Eventually(t, func() bool { _, ok := store.Object("p/cell.json"); return ok }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, m.Stop(ctx))
}

func TestPushLinksAndNames(t *testing.T) {
	ctx := context.Background()
	store := mirror.NewMemStore()
	real := t.TempDir()
	write(t, real, "serving/cells/a.json", "a")
	link := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Symlink(real, link))
	// --out a symbolic link to the folder: followed.
	n, err := mirror.New(store, mirror.URL{Bucket: "aware", Prefix: "p"}, link).Push(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, ok := store.Object("p/serving/cells/a.json")
	assert.True(t, ok)

	// Inside it, a link or a name the store's folder cannot map back is
	// reported, and the other files still go.
	require.NoError(t, os.Symlink(filepath.Join(real, "serving"), filepath.Join(real, "elsewhere")))
	write(t, real, `odd\name.json`, "x")
	write(t, real, "serving/cells/b.json", "b")
	n, err = mirror.New(store, mirror.URL{Bucket: "aware", Prefix: "q"}, real).Push(ctx)
	assert.Equal(t, 2, n)
	assert.ErrorContains(t, err, "elsewhere: a symbolic link")
	assert.ErrorContains(t, err, `not sent: "odd\\name.json"`)
}

func TestPullSkipsFolderMarkers(t *testing.T) {
	ctx := context.Background()
	store := mirror.NewMemStore()
	for _, k := range []string{"p/", "p/serving/", "p/serving/a.json"} {
		require.NoError(t, store.Put(ctx, k, readerOf(""), 0))
	}
	dir := t.TempDir()
	n, err := mirror.New(store, mirror.URL{Bucket: "aware", Prefix: "p"}, dir).Pull(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.FileExists(t, filepath.Join(dir, "serving", "a.json"))
}

// TestStartPushesWhenTheRunStops: a process told to stop (its context
// cancelled) pushes at once, before the run has wound down and Stop is
// called; the push has a context of its own.
func TestStartPushesWhenTheRunStops(t *testing.T) {
	store := mirror.NewMemStore()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	m, err := mirror.Start(ctx, store, mirror.URL{Bucket: "aware", Prefix: "p"}, dir, mirror.WithEvery(time.Hour))
	require.NoError(t, err)
	write(t, dir, "cell.json", "c")
	cancel()
	assert.Eventually(t, func() bool { _, ok := store.Object("p/cell.json"); return ok }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, m.Stop(context.Background()))
}
