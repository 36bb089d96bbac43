package trajectory_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/trajectory"
)

// opener returns an empty store that is closed at the end of the test.
type opener func(t *testing.T) trajectory.Store

// t0 is the time of the first step of the test data.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// stepGap separates consecutive steps of one application.
const stepGap = 10 * time.Second

// gen produces the steps of one application's episodes, with times
// continuing from one episode to the next.
type gen struct {
	app  string
	next time.Time
	sdim int
}

func newGen(app string, start time.Time) *gen { return &gen{app: app, next: start, sdim: 4} }

// episode returns an episode with the given step rewards; done marks its
// last step.
func (g *gen) episode(ep int64, rewards []float64, done bool) []trajectory.Step {
	steps := make([]trajectory.Step, len(rewards))
	for i, r := range rewards {
		state := make([]float64, g.sdim)
		for j := range state {
			state[j] = float64(ep)/3 + float64(i)*0.1 + float64(j)*1e-7 // not exact in binary
		}
		steps[i] = trajectory.Step{App: g.app, Episode: ep, T: i, Time: g.next,
			State:  state,
			Action: []float64{float64(1 + i%5), 0.25 + float64(i)/7, 268435456 + float64(ep)*1048576},
			Reward: r, Stage: []string{"OFFLINE", "ONLINE", "SERVING"}[int(ep)%3]}
		g.next = g.next.Add(stepGap)
	}
	if done && len(steps) > 0 {
		steps[len(steps)-1].Done = true
	}
	return steps
}

// rewards returns n step rewards summing to total.
func rewards(n int, total float64) []float64 {
	r := make([]float64, n)
	for i := range r {
		r[i] = total / float64(n)
	}
	r[n-1] = total - sum(r[:n-1])
	return r
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func episodeNumbers(eps []trajectory.Episode) []int64 {
	var out []int64
	for _, e := range eps {
		out = append(out, e.Episode)
	}
	return out
}

func trajNumbers(trs []trajectory.Trajectory) []int64 {
	var out []int64
	for _, tr := range trs {
		out = append(out, tr.Episode.Episode)
	}
	return out
}

func appendAll(t *testing.T, s trajectory.Store, batches ...[]trajectory.Step) {
	t.Helper()
	for _, b := range batches {
		require.NoError(t, s.Append(t.Context(), b...))
	}
}

// runContract checks a Store implementation against the contract every
// implementation shares.
func runContract(t *testing.T, open opener) {
	t.Run("RecentEpisodes", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		a, b := newGen("default/a", t0), newGen("prod/b", t0.Add(time.Millisecond))
		var want []trajectory.Episode
		for ep := int64(1); ep <= 5; ep++ {
			steps := a.episode(ep, rewards(4, float64(10*ep)), true)
			appendAll(t, s, steps, b.episode(ep, rewards(3, -float64(ep)), true))
			want = append(want, trajectory.Episode{App: "default/a", Episode: ep, Start: steps[0].Time, End: steps[3].Time,
				Steps: 4, Reward: sum(rewards(4, float64(10*ep)))})
		}
		// An episode still running is not complete.
		appendAll(t, s, a.episode(6, []float64{1000, 1000}, false))

		tests := []struct {
			name string
			app  string
			n    int
			want []trajectory.Episode
		}{
			{"last two oldest first", "default/a", 2, want[3:]},
			{"more than there are", "default/a", 100, want},
			{"one", "default/a", 1, want[4:]},
			{"zero", "default/a", 0, nil},
			{"unknown app", "nope/none", 3, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				got, err := s.RecentEpisodes(ctx, tc.app, tc.n)
				require.NoError(t, err)
				if len(tc.want) == 0 {
					assert.Empty(t, got)
					return
				}
				assert.Equal(t, tc.want, got)
			})
		}
		gotB, err := s.RecentEpisodes(ctx, "prod/b", 2)
		require.NoError(t, err)
		assert.Equal(t, []int64{4, 5}, episodeNumbers(gotB))
		assert.InDelta(t, -5, gotB[1].Reward, 1e-12)

		_, err = s.RecentEpisodes(ctx, "default/a", -1)
		assert.ErrorContains(t, err, "negative")

		apps, err := s.Apps(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"default/a", "prod/b"}, apps)
	})

	t.Run("TopOrderTiesAndSteps", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		g := newGen("ns/top", t0)
		byEp := map[int64][]trajectory.Step{}
		for i, total := range []float64{5, 9, 9, 1, 7, 9} {
			ep := int64(i + 1)
			byEp[ep] = g.episode(ep, rewards(5, total), true)
			appendAll(t, s, byEp[ep])
		}
		// Incomplete, with the highest reward: never in Top.
		appendAll(t, s, g.episode(7, []float64{50, 50}, false))
		// An abandoned incomplete episode followed by a complete one.
		byEp[9] = g.episode(9, rewards(5, 8), true)
		appendAll(t, s, byEp[9])

		tests := []struct {
			m    int
			want []int64
		}{
			{1, []int64{6}},
			{3, []int64{6, 3, 2}}, // ties: the higher episode number first
			{5, []int64{6, 3, 2, 9, 5}},
			{100, []int64{6, 3, 2, 9, 5, 1, 4}},
			{0, nil},
		}
		for _, tc := range tests {
			got, err := s.Top(ctx, "ns/top", tc.m)
			require.NoError(t, err, "m=%d", tc.m)
			assert.Equal(t, tc.want, trajNumbers(got), "m=%d", tc.m)
			for _, tr := range got {
				want := byEp[tr.Episode.Episode]
				assert.Equal(t, want, tr.Steps, "steps of episode %d come back exactly", tr.Episode.Episode)
				assert.Equal(t, len(want), tr.Episode.Steps)
				assert.Equal(t, want[0].Time, tr.Episode.Start)
				assert.Equal(t, want[len(want)-1].Time, tr.Episode.End)
				assert.Equal(t, "ns/top", tr.Episode.App)
			}
		}
		got, err := s.Top(ctx, "ns/none", 3)
		require.NoError(t, err)
		assert.Empty(t, got)
		_, err = s.Top(ctx, "ns/top", -2)
		assert.ErrorContains(t, err, "negative")

		recent, err := s.RecentEpisodes(ctx, "ns/top", 10)
		require.NoError(t, err)
		assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 9}, episodeNumbers(recent), "episodes 7 (incomplete) excluded")
	})

	t.Run("RangeClipping", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		g := newGen("ns/range", t0)
		e1 := g.episode(1, rewards(10, 10), true)
		e2 := g.episode(2, rewards(10, 20), true)
		e3 := g.episode(3, rewards(4, 4), false) // running
		other := newGen("ns/other", t0)
		appendAll(t, s, e1, other.episode(1, rewards(30, 1), true), e2, e3)

		tr := func(steps []trajectory.Step) trajectory.Trajectory {
			return trajectory.Trajectory{Episode: trajectory.Episode{App: "ns/range", Episode: steps[0].Episode,
				Start: steps[0].Time, End: steps[len(steps)-1].Time, Steps: len(steps),
				Reward: sum(func() []float64 {
					var r []float64
					for _, s := range steps {
						r = append(r, s.Reward)
					}
					return r
				}())}, Steps: steps}
		}
		tests := []struct {
			name     string
			from, to time.Time
			want     []trajectory.Trajectory
		}{
			{"everything", t0.Add(-time.Hour), t0.Add(time.Hour), []trajectory.Trajectory{tr(e1), tr(e2), tr(e3)}},
			{"across an episode boundary", e1[7].Time, e2[3].Time, []trajectory.Trajectory{tr(e1[7:]), tr(e2[:3])}},
			{"from is inclusive, to exclusive", e2[2].Time, e2[5].Time, []trajectory.Trajectory{tr(e2[2:5])}},
			{"between two steps", e2[2].Time.Add(time.Second), e2[3].Time, nil},
			{"the running episode", e3[1].Time, t0.Add(time.Hour), []trajectory.Trajectory{tr(e3[1:])}},
			{"before everything", t0.Add(-time.Hour), t0, nil},
			{"empty range", e2[2].Time, e2[2].Time, nil},
			{"the whole of time", time.Time{}, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), []trajectory.Trajectory{tr(e1), tr(e2), tr(e3)}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				got, err := s.Range(ctx, "ns/range", tc.from, tc.to)
				require.NoError(t, err)
				if len(tc.want) == 0 {
					assert.Empty(t, got)
					return
				}
				require.Equal(t, trajNumbers(tc.want), trajNumbers(got))
				for i := range got {
					assert.Equal(t, tc.want[i].Steps, got[i].Steps)
					assert.Equal(t, tc.want[i].Episode.Start, got[i].Episode.Start)
					assert.Equal(t, tc.want[i].Episode.End, got[i].Episode.End)
					assert.Equal(t, tc.want[i].Episode.Steps, got[i].Episode.Steps)
					assert.InDelta(t, tc.want[i].Episode.Reward, got[i].Episode.Reward, 1e-9)
				}
			})
		}
		_, err := s.Range(ctx, "ns/range", t0.Add(time.Hour), t0)
		assert.ErrorContains(t, err, "before its start")
		got, err := s.Range(ctx, "ns/unknown", t0.Add(-time.Hour), t0.Add(time.Hour))
		require.NoError(t, err)
		assert.Empty(t, got)
	})

	t.Run("Validation", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		g := newGen("ns/valid", t0)
		first := g.episode(1, rewards(3, 3), false)
		appendAll(t, s, first)
		next := func(mod func(*trajectory.Step)) trajectory.Step {
			st := g.episode(1, []float64{1}, false)[0]
			st.T = 3
			mod(&st)
			return st
		}
		tests := []struct {
			name  string
			step  trajectory.Step
			field string
			msg   string
		}{
			{"NaN reward", next(func(s *trajectory.Step) { s.Reward = math.NaN() }), "field Reward", "not a finite number"},
			{"infinite state", next(func(s *trajectory.Step) { s.State[2] = math.Inf(1) }), "field State[2]", "not a finite number"},
			{"NaN action", next(func(s *trajectory.Step) { s.Action[0] = math.NaN() }), "field Action[0]", "not a finite number"},
			{"empty app", next(func(s *trajectory.Step) { s.App = "" }), "field App", "empty"},
			{"app with newline", next(func(s *trajectory.Step) { s.App = "ns/a\nb" }), "field App", "control character"},
			{"app with backslash", next(func(s *trajectory.Step) { s.App = `ns\a` }), "field App", "backslash"},
			{"stage with newline", next(func(s *trajectory.Step) { s.Stage = "ON\nLINE" }), "field Stage", "control character"},
			{"wrong state dims", next(func(s *trajectory.Step) { s.State = s.State[:3] }), "field State", "3 values, but the app's steps have 4"},
			{"wrong action dims", next(func(s *trajectory.Step) { s.Action = append(s.Action, 1) }), "field Action", "4 values, but the app's steps have 3"},
			{"empty action", next(func(s *trajectory.Step) { s.Action = nil }), "field Action", "empty"},
			{"step skipped", next(func(s *trajectory.Step) { s.T = 4 }), "field T", "4, want 3"},
			{"step repeated", next(func(s *trajectory.Step) { s.T = 2 }), "field T", "2, want 3"},
			{"new episode not at 0", next(func(s *trajectory.Step) { s.Episode = 2; s.T = 1 }), "field T", "want 0"},
			{"episode going back", next(func(s *trajectory.Step) { s.Episode = 0; s.T = 0 }), "field Episode", "must increase"},
			{"negative episode", next(func(s *trajectory.Step) { s.Episode = -1; s.T = 0 }), "field Episode", "negative"},
			{"negative T", next(func(s *trajectory.Step) { s.T = -1 }), "field T", "out of range"},
			{"time not after the last", next(func(s *trajectory.Step) { s.Time = first[2].Time }), "field Time", "not after"},
			{"no time", next(func(s *trajectory.Step) { s.Time = time.Time{} }), "field Time", "not set"},
			{"time out of range", next(func(s *trajectory.Step) { s.Time = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC) }), "field Time", "outside"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				err := s.Append(ctx, tc.step)
				require.Error(t, err)
				assert.ErrorIs(t, err, trajectory.ErrInvalid)
				assert.ErrorContains(t, err, tc.field)
				assert.ErrorContains(t, err, tc.msg)
				assert.ErrorContains(t, err, "steps[0]")
			})
		}
		// Each error names the app, episode and step.
		err := s.Append(ctx, next(func(s *trajectory.Step) { s.Reward = math.Inf(-1) }))
		assert.ErrorContains(t, err, `app "ns/valid", episode 1, T 3`)

		// All or nothing: a good step before a bad one is not kept.
		good := next(func(*trajectory.Step) {})
		bad := next(func(s *trajectory.Step) { s.T = 4; s.Reward = math.NaN() })
		bad.Time = good.Time.Add(time.Second)
		err = s.Append(ctx, good, bad)
		assert.ErrorContains(t, err, "steps[1]")
		got, err := s.Range(ctx, "ns/valid", t0.Add(-time.Hour), t0.Add(time.Hour))
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Len(t, got[0].Steps, 3, "the batch was rejected as a whole")

		// A batch is checked in order against itself.
		two := g.episode(1, []float64{1, 1}, false)
		two[0].T, two[1].T = 3, 3
		err = s.Append(ctx, two...)
		assert.ErrorContains(t, err, "steps[1]")
		assert.ErrorContains(t, err, "field T: 3, want 4")

		// Appending after Done fails; the next episode works.
		done := g.episode(1, []float64{1}, true)
		done[0].T = 3
		appendAll(t, s, done)
		again := g.episode(1, []float64{1}, false)
		again[0].T = 4
		err = s.Append(ctx, again...)
		assert.ErrorContains(t, err, "already complete")
		appendAll(t, s, g.episode(2, []float64{1}, true))
		recent, err := s.RecentEpisodes(ctx, "ns/valid", 5)
		require.NoError(t, err)
		assert.Equal(t, []int64{1, 2}, episodeNumbers(recent))
		assert.Equal(t, 4, recent[0].Steps)
	})

	t.Run("InterleavedBatchesAndNames", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		// Names that need escaping in InfluxDB line protocol and InfluxQL.
		names := []string{"ns/plain", "ns/with space", "ns/with,comma", "ns/with=equals", "ns/quote'd \"x\"", "ns/ünïcode"}
		gens := map[string]*gen{}
		for i, n := range names {
			gens[n] = newGen(n, t0.Add(time.Duration(i)*time.Millisecond))
		}
		want := map[string][]trajectory.Step{}
		for ep := int64(0); ep < 3; ep++ {
			per := map[string][]trajectory.Step{}
			for _, n := range names {
				per[n] = gens[n].episode(ep, rewards(6, float64(ep+1)), true)
				per[n][2].Stage = `say "hi" \ bye, x=y`
				want[n] = append(want[n], per[n]...)
			}
			// One Append holding every app's episode, step by step.
			var batch []trajectory.Step
			for i := range 6 {
				for _, n := range names {
					batch = append(batch, per[n][i])
				}
			}
			require.NoError(t, s.Append(ctx, batch...))
		}
		require.NoError(t, s.Flush(ctx))
		apps, err := s.Apps(ctx)
		require.NoError(t, err)
		assert.Equal(t, slices.Sorted(slices.Values(names)), apps)
		for _, n := range names {
			got, err := s.Range(ctx, n, t0.Add(-time.Hour), t0.Add(time.Hour))
			require.NoError(t, err, n)
			var steps []trajectory.Step
			for _, tr := range got {
				steps = append(steps, tr.Steps...)
			}
			assert.Equal(t, want[n], steps, n)
			top, err := s.Top(ctx, n, 1)
			require.NoError(t, err)
			require.Len(t, top, 1)
			assert.Equal(t, int64(2), top[0].Episode.Episode)
		}
	})

	t.Run("CopiesNotAliases", func(t *testing.T) {
		s := open(t)
		ctx := t.Context()
		g := newGen("ns/copy", t0)
		steps := g.episode(1, rewards(3, 3), true)
		keep := g.episode(1, rewards(3, 3), true)
		for i := range keep {
			keep[i].Time = steps[i].Time
		}
		appendAll(t, s, steps)
		steps[0].State[0], steps[1].Action[2] = 12345, 12345
		top, err := s.Top(ctx, "ns/copy", 1)
		require.NoError(t, err)
		require.Len(t, top, 1)
		assert.Equal(t, keep, top[0].Steps)
		top[0].Steps[0].State[1] = -1
		again, err := s.Top(ctx, "ns/copy", 1)
		require.NoError(t, err)
		assert.Equal(t, keep, again[0].Steps)
	})

	t.Run("Closed", func(t *testing.T) {
		s := open(t)
		g := newGen("ns/closed", t0)
		appendAll(t, s, g.episode(1, rewards(2, 2), true))
		require.NoError(t, s.Close())
		ctx := context.Background()
		assert.ErrorIs(t, s.Append(ctx, g.episode(2, []float64{1}, true)...), trajectory.ErrClosed)
		assert.ErrorIs(t, s.Flush(ctx), trajectory.ErrClosed)
		_, err := s.Top(ctx, "ns/closed", 1)
		assert.ErrorIs(t, err, trajectory.ErrClosed)
		_, err = s.RecentEpisodes(ctx, "ns/closed", 1)
		assert.ErrorIs(t, err, trajectory.ErrClosed)
		_, err = s.Range(ctx, "ns/closed", t0, t0.Add(time.Hour))
		assert.ErrorIs(t, err, trajectory.ErrClosed)
		_, err = s.Apps(ctx)
		assert.ErrorIs(t, err, trajectory.ErrClosed)
		assert.ErrorIs(t, s.Close(), trajectory.ErrClosed)
	})
}

func TestMemoryContract(t *testing.T) {
	runContract(t, func(t *testing.T) trajectory.Store {
		s := trajectory.NewMemory()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
