package trajectory_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/trajectory"
)

// model is what a test wrote: per app, its episodes' steps in order.
type model map[string][][]trajectory.Step

func (m model) add(steps ...trajectory.Step) {
	for _, st := range steps {
		eps := m[st.App]
		if n := len(eps); n > 0 && eps[n-1][0].Episode == st.Episode {
			eps[n-1] = append(eps[n-1], st)
		} else {
			eps = append(eps, []trajectory.Step{st})
		}
		m[st.App] = eps
	}
}

// checkRetained checks that, per app, the store holds a run of the
// model's newest episodes (in progress or complete), each whole, at least
// the newest keep of them, and that RecentEpisodes agrees.
func checkRetained(t *testing.T, s trajectory.Store, m model, keep int) {
	t.Helper()
	ctx := t.Context()
	for app, eps := range m {
		trs, err := s.Range(ctx, app, time.Time{}, t0.Add(10000*time.Hour))
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(trs), min(keep, len(eps)), "app %s: too few episodes kept", app)
		offset := len(eps) - len(trs)
		var done []int64
		for i, tr := range trs {
			want := eps[offset+i]
			require.Equal(t, want[0].Episode, tr.Episode.Episode, "app %s: kept episodes are not the newest run", app)
			require.Equal(t, want, tr.Steps, "app %s episode %d: kept in part or changed", app, tr.Episode.Episode)
			if want[len(want)-1].Done {
				done = append(done, tr.Episode.Episode)
			}
		}
		recent, err := s.RecentEpisodes(ctx, app, len(eps)+1)
		require.NoError(t, err)
		require.Equal(t, done, episodeNumbers(recent), "app %s: complete episodes", app)
	}
}

func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, p := range segments(t, dir, "seg-*.log") {
		st, err := os.Stat(p)
		require.NoError(t, err)
		n += st.Size()
	}
	return n
}

// TestFileRetentionBySize fills a store far past its size bound, one step
// per append: the store keeps accepting writes, stays within the bound
// (plus the active segment and the episodes in progress it moved forward),
// keeps a whole run of each app's newest episodes, never loses the long
// episode in progress that began in the first segment, and reopens to the
// same contents.
func TestFileRetentionBySize(t *testing.T) {
	const segSize, maxBytes = 4 << 10, 64 << 10
	dir := t.TempDir()
	opts := []trajectory.Option{trajectory.WithSegmentSize(segSize), trajectory.WithMaxBytes(maxBytes)}
	s := openFile(t, dir, opts...)
	m := model{}
	short := []*gen{newGen("ns/short-0", t0), newGen("ns/short-1", t0.Add(time.Millisecond)), newGen("ns/short-2", t0.Add(2*time.Millisecond))}
	long := newGen("ns/long", t0.Add(3*time.Millisecond))
	var pending [][]trajectory.Step // per short app: the rest of its current episode
	next := make([]int64, len(short))
	for range short {
		pending = append(pending, nil)
	}
	longEp := long.episode(0, rewards(150, 42), true) // one step every 10 rounds: spans the run
	for round := range 1500 {
		for i, g := range short {
			if len(pending[i]) == 0 {
				pending[i] = g.episode(next[i], rewards(5, float64(round%7)), true)
				next[i]++
			}
			st := pending[i][0]
			pending[i] = pending[i][1:]
			require.NoError(t, s.Append(t.Context(), st), "round %d", round)
			m.add(st)
		}
		if round%10 == 0 && len(longEp) > 0 {
			require.NoError(t, s.Append(t.Context(), longEp[0]), "round %d", round)
			m.add(longEp[0])
			longEp = longEp[1:]
		}
		if round%250 == 249 {
			// The bound, plus the active segment and the long episode
			// moved forward (at most 150 steps of under 200 bytes).
			require.LessOrEqual(t, diskBytes(t, dir), int64(maxBytes+segSize+150*200), "round %d", round)
			checkRetained(t, s, m, 8)
		}
	}
	// Retention did drop: the first episodes of the short apps are gone.
	recent, err := s.RecentEpisodes(t.Context(), "ns/short-0", 10000)
	require.NoError(t, err)
	assert.Greater(t, recent[0].Episode, int64(100), "nothing was dropped")
	assert.Less(t, len(recent), len(m["ns/short-0"]))
	long0, err := s.RecentEpisodes(t.Context(), "ns/long", 10)
	require.NoError(t, err)
	require.Len(t, long0, 1, "the long episode, complete by now, began in the first segment")
	assert.Equal(t, 150, long0[0].Steps)

	before := takeSnapshot(t, s)
	require.NoError(t, s.Close())
	for _, o := range [][]trajectory.Option{opts, nil} {
		r, err := trajectory.OpenFile(dir, o...)
		require.NoError(t, err)
		assert.Equal(t, before, takeSnapshot(t, r), "reopened with %d options", len(o))
		checkRetained(t, r, m, 8)
		require.NoError(t, r.Close())
	}
}

// TestFileRetentionByAge keeps the last hour of step time: every episode
// that began within it is kept whole, none that ended well before it is.
func TestFileRetentionByAge(t *testing.T) {
	dir := t.TempDir()
	const maxAge = time.Hour
	s := openFile(t, dir, trajectory.WithSegmentSize(4<<10), trajectory.WithMaxAge(maxAge))
	m := model{}
	gens := []*gen{newGen("ns/a", t0), newGen("ns/b", t0.Add(time.Second))}
	// 5 hours of 10-second steps per app, 20-step episodes.
	for ep := range int64(90) {
		for _, g := range gens {
			steps := g.episode(ep, rewards(20, 1), true)
			for _, st := range steps {
				require.NoError(t, s.Append(t.Context(), st))
			}
			m.add(steps...)
		}
	}
	newest := gens[1].next.Add(-stepGap)
	for app := range m {
		eps, err := s.RecentEpisodes(t.Context(), app, 1000)
		require.NoError(t, err)
		require.NotEmpty(t, eps)
		// A 4 KiB segment holds under 3 minutes of both apps' steps.
		assert.False(t, eps[0].End.Before(newest.Add(-maxAge-5*time.Minute)),
			"app %s: episode %d ended %s before the newest step", app, eps[0].Episode, newest.Sub(eps[0].End))
		for _, want := range m[app] {
			if !want[0].Time.Before(newest.Add(-maxAge)) {
				assert.GreaterOrEqual(t, want[0].Episode, eps[0].Episode, "app %s: episode %d began in the last hour but was dropped", app, want[0].Episode)
			}
		}
	}
	checkRetained(t, s, m, 1)
}

// TestFileRetentionCrashBeforeRemoval reopens a store as a crash would
// leave it between moving episodes in progress forward and removing the
// old segments (both chains on disk), and with a summary left without its
// segment: nothing is lost or doubled.
func TestFileRetentionCrashBeforeRemoval(t *testing.T) {
	const segSize = 4 << 10
	dir := t.TempDir()
	s := openFile(t, dir, trajectory.WithSegmentSize(segSize))
	fill(t, s, 3, 30, 12) // 3 apps × 30 episodes of 12 steps, and an episode in progress each
	g := newGen("ns/long", t0.Add(-time.Hour))
	long := g.episode(0, rewards(40, 1), false)
	appendAll(t, s, long[:20])
	for ep := range int64(20) {
		for a := range 2 {
			late := newGen("ns/late-"+strconv.Itoa(a), t0.Add(time.Duration(1000*ep+int64(a))*time.Minute))
			appendAll(t, s, late.episode(ep, rewards(12, 1), true))
		}
	}
	appendAll(t, s, long[20:])
	require.NoError(t, s.Close())

	full := filepath.Join(t.TempDir(), "full")
	copyDir(t, dir, full)
	want := snapshotOf(t, full)

	// Open under a bound: retention drops the oldest segments at open,
	// moving the in-progress episodes that began there.
	r, err := trajectory.OpenFile(dir, trajectory.WithSegmentSize(segSize), trajectory.WithMaxBytes(8*segSize))
	require.NoError(t, err)
	retained := takeSnapshot(t, r)
	require.NoError(t, r.Close())
	require.Less(t, len(segments(t, dir, "seg-*.log")), len(segments(t, full, "seg-*.log")), "nothing dropped")
	require.Contains(t, retained.Apps, "ns/long")
	require.Len(t, retained.Range["ns/long"], 1)
	assert.Len(t, retained.Range["ns/long"][0].Steps, 40, "the episode in progress is kept whole")

	t.Run("orphan summaries", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "d")
		copyDir(t, dir, d)
		for _, p := range segments(t, full, "seg-*.sum") {
			if _, err := os.Stat(filepath.Join(d, filepath.Base(p))); os.IsNotExist(err) {
				copyFile(t, p, filepath.Join(d, filepath.Base(p)))
			}
		}
		assert.Equal(t, retained, snapshotOf(t, d))
		assert.Len(t, segments(t, d, "seg-*.sum"), len(segments(t, dir, "seg-*.sum")), "orphan summaries left")
	})
	t.Run("old segments back", func(t *testing.T) {
		d := filepath.Join(t.TempDir(), "d")
		copyDir(t, dir, d)
		for _, p := range segments(t, full, "seg-*") {
			if _, err := os.Stat(filepath.Join(d, filepath.Base(p))); os.IsNotExist(err) {
				copyFile(t, p, filepath.Join(d, filepath.Base(p)))
			}
		}
		// The old chains and the copies are both there: the store reads
		// as it did before retention, each episode once.
		assert.Equal(t, want, snapshotOf(t, d))
	})
}

func TestFileRetentionOptions(t *testing.T) {
	for _, tc := range []struct {
		opts []trajectory.Option
		want string
	}{
		{[]trajectory.Option{trajectory.WithMaxBytes(-1)}, "WithMaxBytes(-1)"},
		{[]trajectory.Option{trajectory.WithSegmentSize(1 << 20), trajectory.WithMaxBytes(1 << 20)}, "at least twice the segment size, 2097152"},
		{[]trajectory.Option{trajectory.WithMaxAge(-time.Second)}, "WithMaxAge(-1s): negative"},
	} {
		_, err := trajectory.OpenFile(t.TempDir(), tc.opts...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func snapshotOf(t *testing.T, dir string) snapshot {
	t.Helper()
	s, err := trajectory.OpenFile(dir)
	require.NoError(t, err)
	defer s.Close()
	return takeSnapshot(t, s)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(to, 0o755))
	for _, p := range segments(t, from, "seg-*") {
		copyFile(t, p, filepath.Join(to, filepath.Base(p)))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o644))
}
