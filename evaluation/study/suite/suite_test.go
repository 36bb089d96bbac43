package suite

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
)

// fake is a study registered by the test: one cell per test-split
// application of a draw, its result the application's index.
var fake = Study{Name: "fake", Summary: "a test study",
	Cost: func(*lab.Lab, string) (time.Duration, error) { return 4 * time.Second, nil },
	Run: func(ctx context.Context, mode string, e lab.Run) (study.Report, error) {
		plan := study.Plan{{Arm: "a", App: "app-0001", Seed: 1}, {Arm: "a", App: "app-0002", Seed: 1}}
		spec := study.Spec[int]{Name: "fake", Dir: e.Dir, Config: mode, Plan: plan, Shard: e.Shard, Workers: e.Workers,
			Cell: func(_ context.Context, c study.Cell) (int, error) { return len(c.App), nil },
			Render: func(_ string, rs []int) (study.Report, error) {
				h := study.Headline{Study: "fake", Figure: "f", Ours: study.Estimate{Value: float64(rs[0] + rs[1]), Lo: 1, Hi: 20, N: 2}, Paper: 2}
				return study.Report{Title: "fake", Headlines: []study.Headline{h}}, nil
			}}
		if e.RenderOnly {
			spec.Cell = nil
		}
		return study.Execute(ctx, spec)
	}}

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
	assert.Equal(t, []string{"characterisation", "adaptation", "serving", "bootstrapping", "fake"}, names)
	_, err := Find("nope")
	assert.ErrorContains(t, err, `no study "nope" (known: characterisation, adaptation, serving, bootstrapping, fake)`)
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
	assert.Contains(t, string(idx), "| fake | f | 16× [1, 20] | 2× | inconclusive (interval holds 1) |")

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
