package trajectory_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/trajectory"
)

func openFile(t *testing.T, dir string, opts ...trajectory.Option) *trajectory.FileStore {
	t.Helper()
	s, err := trajectory.OpenFile(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestFileContract(t *testing.T) {
	runContract(t, func(t *testing.T) trajectory.Store { return openFile(t, t.TempDir()) })
}

func TestFileContractSmallSegments(t *testing.T) {
	// Segments of 4 KiB: episodes span many segments and files are
	// opened and closed for reading.
	runContract(t, func(t *testing.T) trajectory.Store {
		return openFile(t, t.TempDir(), trajectory.WithSegmentSize(4<<10), trajectory.WithMaxOpenFiles(2))
	})
}

// syncBuffer is a concurrency-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func testLogger() (*slog.Logger, *syncBuffer) {
	var buf syncBuffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// snapshot is everything a store tells about its applications.
type snapshot struct {
	Apps   []string
	Recent map[string][]trajectory.Episode
	Top    map[string][]trajectory.Trajectory
	Range  map[string][]trajectory.Trajectory
}

func takeSnapshot(t *testing.T, s trajectory.Store) snapshot {
	t.Helper()
	ctx := t.Context()
	apps, err := s.Apps(ctx)
	require.NoError(t, err)
	snap := snapshot{Apps: apps, Recent: map[string][]trajectory.Episode{}, Top: map[string][]trajectory.Trajectory{},
		Range: map[string][]trajectory.Trajectory{}}
	for _, app := range apps {
		snap.Recent[app], err = s.RecentEpisodes(ctx, app, 1000)
		require.NoError(t, err)
		snap.Top[app], err = s.Top(ctx, app, 5)
		require.NoError(t, err)
		snap.Range[app], err = s.Range(ctx, app, time.Time{}, t0.Add(1000*time.Hour))
		require.NoError(t, err)
	}
	return snap
}

// fill appends episodes of several apps, interleaved, with a running
// episode at the end of each app; it returns the generators to continue.
func fill(t *testing.T, s trajectory.Store, apps, episodes, steps int) []*gen {
	t.Helper()
	var gens []*gen
	for a := range apps {
		gens = append(gens, newGen("ns/app-"+strconv.Itoa(a), t0.Add(time.Duration(a)*time.Millisecond)))
	}
	for ep := range episodes {
		for a, g := range gens {
			appendAll(t, s, g.episode(int64(ep), rewards(steps, float64((ep*7+a*3)%11)), true))
		}
	}
	for _, g := range gens {
		appendAll(t, s, g.episode(int64(episodes), rewards(steps/2, 1), false))
	}
	return gens
}

func segments(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	require.NoError(t, err)
	return m
}

func TestFileReopenRestoresIndex(t *testing.T) {
	tests := []struct {
		name    string
		segSize int64
		damage  func(t *testing.T, dir string) // between close and reopen
		warn    string
	}{
		{name: "one segment", segSize: trajectory.DefaultSegmentSize},
		{name: "many segments with summaries", segSize: 8 << 10},
		{name: "summaries missing", segSize: 8 << 10, damage: func(t *testing.T, dir string) {
			for _, p := range segments(t, dir, "seg-*.sum") {
				require.NoError(t, os.Remove(p))
			}
		}},
		{name: "summary damaged", segSize: 8 << 10, warn: "bad segment summary", damage: func(t *testing.T, dir string) {
			sums := segments(t, dir, "seg-*.sum")
			require.NotEmpty(t, sums)
			flipByte(t, sums[len(sums)/2], 12)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := trajectory.OpenFile(dir, trajectory.WithSegmentSize(tc.segSize))
			require.NoError(t, err)
			gens := fill(t, s, 5, 12, 10)
			before := takeSnapshot(t, s)
			require.NoError(t, s.Close())
			if tc.segSize < trajectory.DefaultSegmentSize {
				assert.Greater(t, len(segments(t, dir, "seg-*.log")), 5)
				assert.Equal(t, len(segments(t, dir, "seg-*.log"))-1, len(segments(t, dir, "seg-*.sum")),
					"every sealed segment has a summary")
			}
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			log, logs := testLogger()
			s2 := openFile(t, dir, trajectory.WithSegmentSize(tc.segSize), trajectory.WithLogger(log))
			assert.Equal(t, before, takeSnapshot(t, s2))
			if tc.warn != "" {
				assert.Contains(t, logs.String(), tc.warn)
			} else {
				assert.NotContains(t, logs.String(), "level=WARN")
			}
			// The store goes on where it stopped: the running episodes
			// continue, out-of-order steps are still refused.
			for _, g := range gens {
				st := g.episode(12, []float64{1}, true)[0]
				st.T = 5
				require.NoError(t, s2.Append(t.Context(), st))
			}
			err = s2.Append(t.Context(), gens[0].episode(12, []float64{1}, true)...)
			assert.ErrorIs(t, err, trajectory.ErrInvalid)
			recent, err := s2.RecentEpisodes(t.Context(), "ns/app-0", 1)
			require.NoError(t, err)
			require.Len(t, recent, 1)
			assert.Equal(t, int64(12), recent[0].Episode)
			assert.Equal(t, 6, recent[0].Steps)
		})
	}
}

func flipByte(t *testing.T, path string, fromEnd int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	b := []byte{0}
	_, err = f.ReadAt(b, st.Size()-fromEnd)
	require.NoError(t, err)
	b[0] ^= 0x5a
	_, err = f.WriteAt(b, st.Size()-fromEnd)
	require.NoError(t, err)
}

func TestFileTornTail(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string, size int64)
		// steps of the last episode that survive
		kept int
		warn string
	}{
		{"cut mid-record", func(t *testing.T, path string, size int64) {
			require.NoError(t, os.Truncate(path, size-7))
		}, 9, "record cut short"},
		{"cut mid-header", func(t *testing.T, path string, size int64) {
			require.NoError(t, os.Truncate(path, size-recordSize()+3))
		}, 9, "record header cut short"},
		{"flipped byte in the last record", func(t *testing.T, path string, size int64) {
			flipByte(t, path, 20)
		}, 9, "record checksum mismatch"},
		{"flipped byte two records back", func(t *testing.T, path string, size int64) {
			flipByte(t, path, recordSize()+20)
		}, 8, "record checksum mismatch"},
		{"garbage appended", func(t *testing.T, path string, size int64) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8})
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, 10, "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := trajectory.OpenFile(dir)
			require.NoError(t, err)
			g := newGen("ns/torn", t0)
			e1 := g.episode(1, rewards(10, 10), true)
			e2 := g.episode(2, rewards(10, 20), true)
			appendAll(t, s, e1, e2)
			require.NoError(t, s.Close())

			segs := segments(t, dir, "seg-*.log")
			require.Len(t, segs, 1)
			st, err := os.Stat(segs[0])
			require.NoError(t, err)
			tc.damage(t, segs[0], st.Size())

			log, logs := testLogger()
			s2 := openFile(t, dir, trajectory.WithLogger(log))
			assert.Contains(t, logs.String(), "dropping a torn or corrupt tail")
			assert.Contains(t, logs.String(), tc.warn)
			got, err := s2.Range(t.Context(), "ns/torn", time.Time{}, t0.Add(time.Hour))
			require.NoError(t, err)
			require.Len(t, got, 2)
			assert.Equal(t, e1, got[0].Steps, "the first episode is intact")
			assert.Equal(t, e2[:tc.kept], got[1].Steps)
			recent, err := s2.RecentEpisodes(t.Context(), "ns/torn", 5)
			require.NoError(t, err)
			if tc.kept == 10 {
				assert.Equal(t, []int64{1, 2}, episodeNumbers(recent))
				return
			}
			assert.Equal(t, []int64{1}, episodeNumbers(recent), "the cut episode is incomplete")
			// The lost steps can be appended again and the log is whole.
			require.NoError(t, s2.Append(t.Context(), e2[tc.kept:]...))
			require.NoError(t, s2.Close())
			s3 := openFile(t, dir, trajectory.WithLogger(log))
			top, err := s3.Top(t.Context(), "ns/torn", 1)
			require.NoError(t, err)
			require.Len(t, top, 1)
			assert.Equal(t, e2, top[0].Steps)
		})
	}
}

// recordSize is the size of the records TestFileTornTail writes (all the
// same size).
var recordSize = sync.OnceValue(func() int64 {
	dir, err := os.MkdirTemp("", "trajsize")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	s, err := trajectory.OpenFile(dir)
	if err != nil {
		panic(err)
	}
	g := newGen("ns/torn", t0)
	ctx := context.Background()
	if err := s.Append(ctx, g.episode(1, rewards(1, 1), false)...); err != nil {
		panic(err)
	}
	_ = s.Close()
	st, err := os.Stat(filepath.Join(dir, "seg-0000000001.log"))
	if err != nil {
		panic(err)
	}
	return st.Size() - 8
})

func TestFileLock(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir)
	_, err := trajectory.OpenFile(dir)
	require.ErrorIs(t, err, trajectory.ErrLocked)
	assert.Contains(t, err.Error(), strconv.Itoa(os.Getpid()))
	require.NoError(t, s.Close())
	s2, err := trajectory.OpenFile(dir)
	require.NoError(t, err, "the lock is released by Close")
	require.NoError(t, s2.Close())
}

// TestFileCrashedWriter appends from a child process that exits without
// Flush or Close: the records it wrote are there, and its lock went with
// it.
func TestFileCrashedWriter(t *testing.T) {
	if dir := os.Getenv("TRAJECTORY_CRASH_DIR"); dir != "" {
		s, err := trajectory.OpenFile(dir)
		if err != nil {
			os.Exit(3)
		}
		g := newGen("ns/crash", t0)
		for ep := int64(1); ep <= 3; ep++ {
			if err := s.Append(context.Background(), g.episode(ep, rewards(10, float64(ep)), true)...); err != nil {
				os.Exit(4)
			}
		}
		os.Exit(0) // no Flush, no Close
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileCrashedWriter$")
	cmd.Env = append(os.Environ(), "TRAJECTORY_CRASH_DIR="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	s := openFile(t, dir)
	top, err := s.Top(t.Context(), "ns/crash", 3)
	require.NoError(t, err)
	assert.Equal(t, []int64{3, 2, 1}, trajNumbers(top))
	for _, tr := range top {
		assert.Len(t, tr.Steps, 10)
	}
}

func TestFileOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  trajectory.Option
		msg  string
	}{
		{"tiny segments", trajectory.WithSegmentSize(100), "WithSegmentSize(100)"},
		{"no open files", trajectory.WithMaxOpenFiles(0), "WithMaxOpenFiles(0)"},
		{"nil logger", trajectory.WithLogger(nil), "WithLogger"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trajectory.OpenFile(t.TempDir(), tc.opt)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestFileForeignSegment(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "seg-0000000001.log"), []byte("not a trajectory log at all"), 0o644))
	_, err := trajectory.OpenFile(dir)
	require.ErrorIs(t, err, trajectory.ErrCorrupt)
	assert.ErrorContains(t, err, "not a trajectory segment")
	// The lock was released on the failed open.
	require.NoError(t, os.Remove(filepath.Join(dir, "seg-0000000001.log")))
	s := openFile(t, dir)
	require.NoError(t, s.Close())
}

// TestFileConcurrent appends from several goroutines (one per app) while
// others read, under the race detector.
func TestFileConcurrent(t *testing.T) {
	s := openFile(t, t.TempDir(), trajectory.WithSegmentSize(16<<10), trajectory.WithMaxOpenFiles(3))
	ctx := t.Context()
	var wg sync.WaitGroup
	for a := range 4 {
		wg.Go(func() {
			g := newGen("ns/c"+strconv.Itoa(a), t0)
			for ep := range int64(15) {
				for _, st := range g.episode(ep, rewards(8, float64(ep)), true) {
					assert.NoError(t, s.Append(ctx, st))
				}
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for a := range 4 {
					top, err := s.Top(ctx, "ns/c"+strconv.Itoa(a), 3)
					assert.NoError(t, err)
					for _, tr := range top {
						assert.Len(t, tr.Steps, 8)
					}
				}
				assert.NoError(t, s.Flush(ctx))
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	for a := range 4 {
		recent, err := s.RecentEpisodes(ctx, "ns/c"+strconv.Itoa(a), 100)
		require.NoError(t, err)
		assert.Len(t, recent, 15)
	}
}
