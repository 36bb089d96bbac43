package suite

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
)

// fake is a study registered by the test: one cell per test-split
// application of a draw, its result the application's index.
var fake = Study{Name: "fake", Summary: "a test study",
	Cost: func(*lab.Lab, string, Variant) (time.Duration, error) { return 4 * time.Second, nil },
	Run: func(ctx context.Context, mode string, _ Variant, e lab.Run) (study.Report, error) {
		plan := study.Plan{{Arm: "a", App: "app-0001", Seed: 1}, {Arm: "a", App: "app-0002", Seed: 1}}
		spec := study.Spec[int]{Name: "fake", Dir: e.Dir, Config: mode, Plan: plan, Shard: e.Shard, Workers: e.Workers,
			Cell: func(_ context.Context, c study.Cell) (int, error) { fakeCells.Add(1); return len(c.App), nil },
			Render: func(_ string, rs []int) (study.Report, error) {
				h := study.Headline{Study: "fake", Figure: "f", Ours: study.Estimate{Value: float64(rs[0] + rs[1]), Lo: 1, Hi: 20, N: 2}, Paper: 2}
				return study.Report{Title: "fake", Headlines: []study.Headline{h}}, nil
			}}
		if e.RenderOnly {
			spec.Cell = nil
		}
		return study.Execute(ctx, spec)
	}}

// fakeCells counts the fake study's cells computed.
var fakeCells atomic.Int64

func init() { Register(fake) }

func smallLab() lab.Config {
	c := lab.DefaultConfig()
	c.PoolSize, c.Traces = 20, ""
	return c
}

func TestRegistry(t *testing.T) {
	var names []string
	for _, s := range Studies() {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{"characterisation", "adaptation", "serving", "bootstrapping", "alpha", "fake"}, names)
	_, err := Find("nope")
	assert.ErrorContains(t, err, `no study "nope" (known: characterisation, adaptation, serving, bootstrapping, alpha, fake)`)
	assert.Panics(t, func() { Register(fake) })
}

func TestRunShardsMergeAndIndex(t *testing.T) {
	ctx := context.Background()
	out := t.TempDir()
	var log bytes.Buffer
	o := Options{Out: out, Mode: Quick, Lab: smallLab(), Workers: 2, Log: &log}
	entries, err := Run(ctx, []string{"fake"}, o)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Contains(t, log.String(), "expected wall time 2s")
	idx, err := os.ReadFile(filepath.Join(out, "index.md"))
	require.NoError(t, err)
	assert.Contains(t, string(idx), "[fake](fake/report.md)")
	assert.Contains(t, string(idx), "| fake | f | 16× [1, 20] | 2× | inconclusive (interval holds 1 and the paper's) |")

	// Two shards, then a merge into a third root, as two machines would.
	var shards []string
	for i := 1; i <= 2; i++ {
		root := filepath.Join(t.TempDir(), "m")
		o := Options{Out: root, Mode: Quick, Lab: smallLab(), Workers: 1, Shard: study.ShardSpec{Index: i, Of: 2}, Log: &log}
		entries, err := Run(ctx, []string{"fake"}, o)
		require.NoError(t, err)
		assert.Empty(t, entries)
		assert.NoFileExists(t, filepath.Join(root, "index.md"))
		shards = append(shards, filepath.Join(root, "fake"))
	}
	merged := t.TempDir()
	rep, err := Merge(ctx, "fake", shards, Options{Out: merged, Mode: Quick, Lab: smallLab()})
	require.NoError(t, err)
	assert.Equal(t, entries[0].Report, rep)

	_, err = Run(ctx, []string{"fake"}, Options{Out: out, Mode: "slow", Lab: smallLab()})
	assert.ErrorContains(t, err, `mode "slow": want quick or full`)
	_, err = Run(ctx, []string{"nope"}, Options{Out: out, Mode: Quick, Lab: smallLab()})
	assert.ErrorContains(t, err, `no study "nope"`)
	_, err = Merge(ctx, "fake", []string{t.TempDir()}, Options{Out: t.TempDir(), Mode: Quick, Lab: smallLab()})
	assert.ErrorContains(t, err, "is not a study's folder")
}

// sized is a configuration whose cost is its size in seconds.
type sized struct{ N int }

func (s sized) Estimate(*lab.Lab) (time.Duration, error) {
	return time.Duration(s.N) * time.Second, nil
}

// TestVariant: a study takes the Variant options it declares and ignores
// the others; an option that no study named takes is refused.
func TestVariant(t *testing.T) {
	s := Of("sized", "a test study", func() sized { return sized{1} }, func() sized { return sized{10} },
		func(context.Context, lab.Run, sized) (study.Report, error) { return study.Report{}, nil },
		Vary[sized]{Takes: ArmsOption, Apply: func(c sized, v Variant) (sized, error) {
			if v.SimEpisodes < 0 {
				return c, errors.New("negative")
			}
			c.N += len(v.Arms) + v.SimEpisodes
			return c, nil
		}})
	assert.Equal(t, []string{ArmsOption}, s.Takes)
	for _, tc := range []struct {
		mode string
		v    Variant
		want time.Duration
		err  string
	}{
		{Quick, Variant{}, time.Second, ""},
		{Full, Variant{}, 10 * time.Second, ""},
		{Quick, Variant{Arms: []string{"a", "b"}}, 3 * time.Second, ""},
		{Full, Variant{SimEpisodes: 5}, 15 * time.Second, ""},
		{Quick, Variant{MetaFrom: "dir"}, time.Second, ""},
		{Quick, Variant{SimEpisodes: -1}, 0, "negative"},
	} {
		d, err := s.Cost(nil, tc.mode, tc.v)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.v)
			continue
		}
		require.NoError(t, err, tc.v)
		assert.Equal(t, tc.want, d, tc.v)
	}

	o := Options{Out: t.TempDir(), Mode: Quick, Lab: smallLab(), Log: io.Discard}
	for _, tc := range []struct {
		names []string
		v     Variant
		want  string
	}{
		{[]string{"fake"}, Variant{Arms: []string{"PPO"}}, "optional arms: taken by bootstrapping, none of the studies named (fake)"},
		{[]string{"fake", "serving"}, Variant{MetaFrom: "dir"}, "a meta-training folder: taken by adaptation, none of the studies named (fake, serving)"},
		{[]string{"fake"}, Variant{SimEpisodes: 3}, "optional arms: taken by bootstrapping"},
	} {
		o.Variant = tc.v
		_, err := Run(context.Background(), tc.names, o)
		assert.ErrorContains(t, err, tc.want, tc.names)
		_, err = Merge(context.Background(), tc.names[0], []string{t.TempDir()}, o)
		assert.ErrorContains(t, err, tc.want[:20], tc.names)
	}
	o.Variant, o.DryRun = Variant{Arms: []string{"nope"}}, true
	o.Lab.PoolSize = 100
	_, err := Run(context.Background(), []string{"bootstrapping"}, o)
	assert.ErrorContains(t, err, `bootstrapping: no arm "nope"`)
	o.Variant = Variant{Arms: []string{"PPO"}}
	_, err = Run(context.Background(), []string{"bootstrapping", "serving"}, o)
	assert.NoError(t, err, "a dry run of the variant")
}

// TestRunTestbedTogether: the testbed cells of every study that runs on
// one go to the testbed in one batch (the error of the batch names them
// all); a run without a testbed variant runs none.
func TestRunTestbedTogether(t *testing.T) {
	clock := testbedrun.DefaultClock()
	part := func(name string) func(context.Context, string, Variant, lab.Run) (lab.TestbedPart, error) {
		return func(_ context.Context, _ string, _ Variant, r lab.Run) (lab.TestbedPart, error) {
			assert.Equal(t, filepath.Join("out", name), r.Dir)
			return lab.PlanTestbed(lab.Run{Dir: t.TempDir(), Testbed: r.Testbed}, name, 1, nil, 1, clock, func() ([]testbedrun.Cell, error) {
				return []testbedrun.Cell{{Name: name + "-cell"}}, nil
			})
		}
	}
	studies := []Study{{Name: "one", Part: part("one")}, {Name: "plain"}, {Name: "two", Part: part("two")}}
	o := Options{Out: "out", Log: io.Discard, Variant: Variant{Testbed: &clock}}
	// A testbed of no clock: the batch is refused as one.
	run := func(s Study) lab.Run { return lab.Run{Dir: filepath.Join("out", s.Name), Testbed: &testbedrun.Bed{}} }
	err := runTestbed(context.Background(), studies, o, run)
	assert.ErrorContains(t, err, "one, two: testbedrun: the testbed in  runs")
	o.Variant.Testbed = nil
	assert.NoError(t, runTestbed(context.Background(), studies, o, run), "no testbed variant")
}

// TestTestbedWall: the dry run's testbed wall time is the longest
// study's testbed cells on the clock (they run at once), none without a
// testbed.
func TestTestbedWall(t *testing.T) {
	clock := testbedrun.DefaultClock()
	boot, err := Find("bootstrapping")
	require.NoError(t, err)
	serve, err := Find("serving")
	require.NoError(t, err)
	adapt, err := Find("adaptation")
	require.NoError(t, err)
	o := Options{Mode: Quick, Variant: Variant{Testbed: &clock}}
	assert.Equal(t, 31*10*3*time.Second, boot.Wall(Quick, o.Variant), "30 episodes of 10 steps and one more, 3 s each")
	assert.Equal(t, 21*10*3*time.Second, serve.Wall(Quick, o.Variant))
	assert.Equal(t, 31*10*3*time.Second, testbedWall([]Study{adapt, serve, boot}, o))
	o.Variant.Testbed = nil
	assert.Zero(t, testbedWall([]Study{adapt, serve, boot}, o))
}

// TestNeedTestbed: a testbed is brought up or attached only when a study
// of the run has testbed cells its folder does not keep.
func TestNeedTestbed(t *testing.T) {
	clock := testbedrun.DefaultClock()
	kept := t.TempDir()
	cells := func() ([]testbedrun.Cell, error) { return []testbedrun.Cell{{Name: "c"}}, nil }
	// A kept record: a part run once whose results went into kept.
	p, err := lab.PlanTestbed(lab.Run{Dir: kept, Testbed: &testbedrun.Bed{}}, "one", 1, []string{"u"}, 1, clock, cells)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(kept, lab.TestbedFile), []byte(`{"config":1,"apps":["u"],"results":[{"cell":"c"}]}`), 0o644))
	require.False(t, p.Kept())
	part := func(dir string) func(context.Context, string, Variant, lab.Run) (lab.TestbedPart, error) {
		return func(_ context.Context, _ string, _ Variant, r lab.Run) (lab.TestbedPart, error) {
			r.Dir = dir
			return lab.PlanTestbed(r, "one", 1, []string{"u"}, 1, clock, cells)
		}
	}
	o := Options{Variant: Variant{Testbed: &clock}}
	run := func(Study) lab.Run { return lab.Run{} }
	need, err := needTestbed(context.Background(), []Study{{Name: "plain"}, {Name: "one", Part: part(kept)}}, o, run)
	require.NoError(t, err)
	assert.False(t, need, "every testbed cell kept")
	need, err = needTestbed(context.Background(), []Study{{Name: "one", Part: part(kept)}, {Name: "two", Part: part(t.TempDir())}}, o, run)
	require.NoError(t, err)
	assert.True(t, need, "a study's cells not kept")
	o.Variant.Testbed = nil
	need, err = needTestbed(context.Background(), []Study{{Name: "two", Part: part(t.TempDir())}}, o, run)
	require.NoError(t, err)
	assert.False(t, need, "no testbed variant")
}
