package study

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plan is 3 arms × 4 apps × 2 seeds.
func plan() Plan {
	var p Plan
	for _, app := range []string{"app-0001", "app-0002", "app-0003", "app-0004"} {
		for seed := range uint64(2) {
			for _, arm := range []string{"aware", "tl", "tl+"} {
				p = append(p, Cell{Arm: arm, App: app, Seed: seed + 1, Test: 1})
			}
		}
	}
	return p
}

type result struct {
	Episodes int     `json:"episodes"`
	Reward   float64 `json:"reward"`
}

// fakeCell's result depends on the cell only.
func fakeCell(_ context.Context, c Cell) (result, error) {
	r := rand.New(rand.NewPCG(c.Seed, uint64(len(c.App)+len(c.Arm))))
	return result{Episodes: 10 + r.IntN(20) + len(c.Arm), Reward: r.Float64()}, nil
}

func TestCellKeysAndValidation(t *testing.T) {
	assert.Equal(t, "t007_tl+_app-0003_drift_s42", Cell{Arm: "tl+", App: "app-0003", Scenario: "drift", Seed: 42, Test: 7}.Key())
	assert.Equal(t, "rule_app-0001_s1", Cell{Arm: "rule", App: "app-0001", Seed: 1}.Key())
	require.NoError(t, plan().Validate())
	bad := Plan{{Arm: "aware", App: "a"}, {Arm: "aware", App: "a"}, {Arm: "x/y", App: "a"}, {App: "a"}}
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{"cells 0 and 1 are both aware_a_s0", `cell arm "x/y"`, "arm and app are required"} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestShardsPartitionThePlan(t *testing.T) {
	p := plan()
	for _, n := range []int{1, 2, 4, 5, 24, 30} {
		seen := map[string]int{}
		for i := 1; i <= n; i++ {
			for _, c := range p.Shard(ShardSpec{i, n}) {
				seen[c.Key()]++
			}
		}
		assert.Len(t, seen, len(p), "n=%d", n)
		for k, v := range seen {
			assert.Equal(t, 1, v, "n=%d: %s", n, k)
		}
	}
	s, err := ParseShard("2/4")
	require.NoError(t, err)
	assert.Equal(t, ShardSpec{2, 4}, s)
	for _, bad := range []string{"0/4", "5/4", "2", "a/b", "1/0", ""} {
		_, err := ParseShard(bad)
		assert.ErrorContains(t, err, "want i/n", bad)
	}
}

func TestRunResumesAndDoesNotDependOnWorkers(t *testing.T) {
	ctx := context.Background()
	want, err := Run(ctx, mustStore(t), plan(), 1, nil, fakeCell)
	require.NoError(t, err)

	// Interrupted: the 9th cell fails; the cells done are kept.
	s := mustStore(t)
	var calls atomic.Int32
	boom := errors.New("machine went away")
	_, err = Run(ctx, s, plan(), 2, nil, func(ctx context.Context, c Cell) (result, error) {
		if calls.Add(1) == 9 {
			return result{}, boom
		}
		return fakeCell(ctx, c)
	})
	require.ErrorIs(t, err, boom)
	done := len(plan()) - len(s.Missing(plan()))
	require.GreaterOrEqual(t, done, 7)
	require.Less(t, done, len(plan()))

	// Resumed with 4 workers: only the missing cells run; same results.
	calls.Store(0)
	var out strings.Builder
	got, err := Run(ctx, s, plan(), 4, &Progress{W: &out, Name: "adaptation"}, func(ctx context.Context, c Cell) (result, error) {
		calls.Add(1)
		return fakeCell(ctx, c)
	})
	require.NoError(t, err)
	assert.Equal(t, int32(len(plan())-done), calls.Load(), "finished cells are not redone")
	assert.Equal(t, want, got)
	assert.Contains(t, out.String(), fmt.Sprintf("adaptation: %d of 24 cells already done (resuming)", done))
	assert.Contains(t, out.String(), "adaptation: 24/24 cells (100%)")
}

// TestRunWarmsEachArmFirst: while an arm's first cell runs (building what
// the arm's cells share), the other worker runs the other arms' cells
// instead of the arm's next one; with nothing else left it runs that one.
func TestRunWarmsEachArmFirst(t *testing.T) {
	p := Plan{{Arm: "meta", App: "a"}, {Arm: "meta", App: "b"}, {Arm: "tl", App: "a"}, {Arm: "tl", App: "b"}, {Arm: "tl", App: "c"}, {Arm: "meta", App: "c"}}
	var mu sync.Mutex
	var started []string
	tlDone, allTL := 0, make(chan struct{})
	_, err := Run(context.Background(), mustStore(t), p, 2, nil, func(_ context.Context, c Cell) (result, error) {
		mu.Lock()
		started = append(started, c.Key())
		mu.Unlock()
		switch {
		case c.Arm == "meta" && c.App == "a":
			<-allTL // the long first cell of its arm
		case c.Arm == "tl":
			mu.Lock()
			if tlDone++; tlDone == 3 {
				close(allTL)
			}
			mu.Unlock()
		}
		return result{}, nil
	})
	require.NoError(t, err)
	require.Len(t, started, 6)
	assert.ElementsMatch(t, []string{"meta_a_s0", "tl_a_s0", "tl_b_s0", "tl_c_s0"}, started[:4])
	assert.ElementsMatch(t, []string{"meta_b_s0", "meta_c_s0"}, started[4:])
}

func TestRunRefusesAnInvalidPlan(t *testing.T) {
	_, err := Run(context.Background(), mustStore(t), Plan{{Arm: "a", App: "b"}, {Arm: "a", App: "b"}}, 1, nil, fakeCell)
	assert.ErrorContains(t, err, "are both")
}

func TestShardedRunsMergeToTheUnshardedResult(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	want, err := Run(ctx, mustStore(t), plan(), 2, nil, fakeCell)
	require.NoError(t, err)
	var srcs []string
	for i := 1; i <= 4; i++ {
		src := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		s, err := OpenStore(src)
		require.NoError(t, err)
		_, err = Run(ctx, s, plan().Shard(ShardSpec{i, 4}), 1, nil, fakeCell)
		require.NoError(t, err)
		srcs = append(srcs, src)
	}
	merged, err := OpenStore(filepath.Join(dir, "merged"))
	require.NoError(t, err)
	n, err := Merge(merged, srcs...)
	require.NoError(t, err)
	assert.Equal(t, len(plan()), n)
	assert.Empty(t, merged.Missing(plan()))
	got, err := Run(ctx, merged, plan(), 1, nil, func(context.Context, Cell) (result, error) {
		return result{}, errors.New("nothing left to run")
	})
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Merging again is a no-op; a conflicting cell is named.
	n, err = Merge(merged, srcs...)
	require.NoError(t, err)
	assert.Zero(t, n)
	c := plan().Shard(ShardSpec{3, 4})[0]
	s3 := &Store{Dir: srcs[2]}
	require.NoError(t, s3.Put(c, result{Episodes: -1}))
	_, err = Merge(merged, srcs...)
	assert.ErrorContains(t, err, "cell "+c.Key()+" differs")
	_, err = Merge(merged, filepath.Join(dir, "nowhere"))
	assert.ErrorContains(t, err, "holds no study output")
}

func TestStoreRejectsAForeignFile(t *testing.T) {
	s := mustStore(t)
	c := Cell{Arm: "aware", App: "app-0001", Seed: 1}
	require.NoError(t, os.WriteFile(s.path(c), []byte("not json"), 0o644))
	var r result
	assert.ErrorContains(t, s.Get(c, &r), "is not a cell's result")
}

func TestProgressETA(t *testing.T) {
	now := time.Unix(0, 0)
	var out strings.Builder
	p := &Progress{W: &out, Name: "serving", Now: func() time.Time { return now }}
	p.start(4, 0)
	for i := range 4 {
		now = now.Add(10 * time.Second)
		p.done(Cell{Arm: "aware", App: "a", Seed: uint64(i)})
	}
	assert.Contains(t, out.String(), "serving: 1/4 cells (25%), 10s elapsed, about 30s left")
	assert.Contains(t, out.String(), "serving: 4/4 cells (100%), 40s elapsed, about 0s left")
}

func TestBootstrapKnownAnswers(t *testing.T) {
	b := DefaultBootstrap()
	e, err := b.Mean([]float64{3, 3, 3, 3})
	require.NoError(t, err)
	assert.Equal(t, Estimate{Value: 3, Lo: 3, Hi: 3, N: 4, Level: 0.95}, e)

	again, err := b.Mean([]float64{1, 5, 2, 8, 3})
	require.NoError(t, err)
	same, err := b.Mean([]float64{1, 5, 2, 8, 3})
	require.NoError(t, err)
	assert.Equal(t, again, same, "seeded")
	assert.InDelta(t, 3.8, again.Value, 1e-12)
	assert.Less(t, again.Lo, again.Value)
	assert.Greater(t, again.Hi, again.Value)

	// Coverage: over 200 samples of 40 draws from N(10, 2²), the 95 %
	// interval holds the true mean about 95 % of the time (the percentile
	// bootstrap runs a little short at n = 40).
	r := rand.New(rand.NewPCG(7, 7))
	hits := 0
	for k := range 200 {
		xs := make([]float64, 40)
		for i := range xs {
			xs[i] = 10 + 2*r.NormFloat64()
		}
		bk := Bootstrap{Level: 0.95, Resamples: 500, Seed: uint64(k)}
		e, err := bk.Mean(xs)
		require.NoError(t, err)
		if e.Lo <= 10 && 10 <= e.Hi {
			hits++
		}
	}
	assert.InDelta(t, 0.95, float64(hits)/200, 0.05, "coverage %d/200", hits)

	// A paired ratio of exactly twice is 2 with no spread; unpaired, the
	// interval holds the true ratio.
	den := []float64{4, 7, 9, 12, 20}
	numr := make([]float64, len(den))
	for i, d := range den {
		numr[i] = 2 * d
	}
	e, err = b.Ratio(numr, den, true)
	require.NoError(t, err)
	assert.InDelta(t, 2, e.Value, 1e-12)
	assert.InDelta(t, 2, e.Lo, 1e-12)
	assert.InDelta(t, 2, e.Hi, 1e-12)
	xs, ys := make([]float64, 60), make([]float64, 80)
	for i := range xs {
		xs[i] = 55 + 5*r.NormFloat64()
	}
	for i := range ys {
		ys[i] = 10 + 2*r.NormFloat64()
	}
	e, err = b.Ratio(xs, ys, false)
	require.NoError(t, err)
	assert.InDelta(t, 5.5, e.Value, 0.3)
	assert.Less(t, e.Lo, 5.5)
	assert.Greater(t, e.Hi, 5.5)

	for _, tc := range []struct {
		name string
		err  error
	}{
		{"empty", func() error { _, err := b.Mean(nil); return err }()},
		{"NaN", func() error { _, err := b.Mean([]float64{1, math.NaN()}); return err }()},
		{"zero denominator", func() error { _, err := b.Ratio([]float64{1}, []float64{0, 0}, false); return err }()},
		{"paired lengths", func() error { _, err := b.Ratio([]float64{1, 2}, []float64{1}, true); return err }()},
		{"level", func() error { _, err := Bootstrap{Level: 1, Resamples: 1000}.Mean([]float64{1}); return err }()},
	} {
		assert.Error(t, tc.err, tc.name)
	}
	assert.Equal(t, "3.8 [2.2, 5.6]", Estimate{Value: 3.8, Lo: 2.2, Hi: 5.6, N: 5}.String())
	assert.Equal(t, "–", Estimate{}.String())
}

func mustStore(t *testing.T) *Store {
	t.Helper()
	s, err := OpenStore(t.TempDir())
	require.NoError(t, err)
	return s
}

// A cell cancelled because another failed must not stand for the failure,
// even when it comes earlier in the plan and its error wraps the context's.
func TestRunReportsTheFailureNotTheCancellations(t *testing.T) {
	boom := errors.New("out of memory")
	started := make(chan struct{})
	_, err := Run(context.Background(), mustStore(t), plan()[:2], 2, nil, func(ctx context.Context, c Cell) (result, error) {
		if c == plan()[1] {
			<-started
			return result{}, boom
		}
		close(started)
		<-ctx.Done()
		return result{}, fmt.Errorf("training %s: %w", c.Key(), ctx.Err())
	})
	require.ErrorIs(t, err, boom)
}
