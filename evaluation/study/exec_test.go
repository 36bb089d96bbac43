package study

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sumSpec is a study whose cell result is a known function of the cell and
// whose report is the sum of the results.
func sumSpec(dir string, cfg any, shard ShardSpec) Spec[float64] {
	return Spec[float64]{Name: "sum", Dir: dir, Config: cfg, Plan: plan(), Shard: shard, Workers: 2,
		Cell: func(_ context.Context, c Cell) (float64, error) { return float64(len(c.Arm)) * float64(c.Seed), nil },
		Render: func(dir string, rs []float64) (Report, error) {
			s := 0.0
			for _, r := range rs {
				s += r
			}
			return Report{Title: "sum", Paragraphs: []string{"sum " + num(s)}}, os.WriteFile(filepath.Join(dir, "plot.txt"), []byte("x"), 0o644)
		}}
}

func TestExecuteWholeShardedAndMerged(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := map[string]any{"episodes": 3, "arms": []string{"a", "b"}}
	whole, err := Execute(ctx, sumSpec(filepath.Join(root, "whole"), cfg, All))
	require.NoError(t, err)
	// 4 apps × (1+2 seeds) × (5+2+3 letters) = 4·3·10.
	assert.Equal(t, []string{"sum 120"}, whole.Paragraphs)
	for _, f := range []string{"report.md", "results.json", "plot.txt", "config.json"} {
		assert.FileExists(t, filepath.Join(root, "whole", f))
	}

	var shards []string
	for i := 1; i <= 3; i++ {
		dir := filepath.Join(root, "shard", string(rune('0'+i)))
		_, err := Execute(ctx, sumSpec(dir, cfg, ShardSpec{i, 3}))
		require.ErrorIs(t, err, ErrShard)
		assert.NoFileExists(t, filepath.Join(dir, "report.md"), "a shard does not report")
		shards = append(shards, dir)
	}
	merged := filepath.Join(root, "merged")
	// Rendering before the merge names what is missing.
	spec := sumSpec(merged, cfg, All)
	spec.Cell = nil
	_, err = Execute(ctx, spec)
	require.ErrorContains(t, err, "holds 0 of the plan's 24 cells")
	require.NoError(t, MergeDirs(merged, shards...))
	got, err := Execute(ctx, spec)
	require.NoError(t, err)
	assert.Equal(t, whole, got)
	a, err := os.ReadFile(filepath.Join(root, "whole", "report.md"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(merged, "report.md"))
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b))

	// Another configuration is refused, whatever order its keys were written in.
	same := map[string]any{"arms": []string{"a", "b"}, "episodes": 3}
	_, err = Execute(ctx, sumSpec(merged, same, All))
	require.NoError(t, err)
	_, err = Execute(ctx, sumSpec(merged, map[string]any{"episodes": 4}, All))
	require.ErrorContains(t, err, "holds cells of another configuration")
	other := filepath.Join(root, "other")
	_, err = Execute(ctx, sumSpec(other, map[string]any{"episodes": 4}, ShardSpec{1, 3}))
	require.ErrorIs(t, err, ErrShard)
	err = MergeDirs(filepath.Join(root, "m2"), shards[0], other)
	require.ErrorContains(t, err, "ran another configuration")
	require.ErrorContains(t, MergeDirs(filepath.Join(root, "m3"), filepath.Join(root, "nothing")), "is not a study's folder")
	require.ErrorContains(t, MergeDirs(filepath.Join(root, "m4")), "no shard folders")
}

func TestExecuteRefusesABadPlanAndReportsARenderError(t *testing.T) {
	ctx := context.Background()
	spec := sumSpec(t.TempDir(), 1, All)
	spec.Plan = append(spec.Plan, spec.Plan[0])
	_, err := Execute(ctx, spec)
	require.ErrorContains(t, err, "are both")

	spec = sumSpec(t.TempDir(), 1, All)
	spec.Render = func(string, []float64) (Report, error) { return Report{}, errors.New("no figures") }
	_, err = Execute(ctx, spec)
	require.ErrorContains(t, err, "study sum: report: no figures")
}

func TestReportAndIndexMarkdown(t *testing.T) {
	rep := Report{
		Title:      "Adaptation",
		Paragraphs: []string{"Two tests."},
		Tables:     []Table{{Title: "arms", Columns: []string{"arm", "episodes"}, Rows: [][]string{{"AWARE", "12"}}}},
		Figures:    []Figure{{File: "cdf.png", Caption: "Episodes, CDF"}},
		Headlines:  []Headline{{Study: "adaptation", Figure: "episodes, TL / AWARE", Ours: Estimate{Value: 2, Lo: 1.5, Hi: 2.5, N: 4}, Paper: 5.5}},
		Wins: []Win{{Study: "adaptation", Arm: "AWARE", Window: "50 adapting", Reward: Estimate{Value: 147, Lo: 146, Hi: 148, N: 4},
			RewardDiff: Estimate{Value: 6, Lo: 5, Hi: 7, N: 4}, SLODiff: Estimate{Value: 7.5, Lo: 7, Hi: 8, N: 4}}},
	}
	var b strings.Builder
	require.NoError(t, rep.Markdown(&b))
	dir := t.TempDir()
	path := filepath.Join(dir, "index.md")
	require.NoError(t, WriteIndex(path, "Studies (quick)", []Entry{{Name: "adaptation", Dir: filepath.Join(dir, "adaptation"), Report: rep, Elapsed: 61500 * time.Millisecond}}, "A note."))
	idx, err := os.ReadFile(path)
	require.NoError(t, err)
	golden(t, "report-and-index.golden.md", b.String()+"---\n"+string(idx))
}
