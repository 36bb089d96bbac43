package baselines

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// overloaded is an application that needs about 3 cores against an
// initial single pod of half a core.
func overloaded() sim.App {
	shape := make([]float64, 100)
	for i := range shape {
		shape[i] = 1
	}
	return sim.App{
		Name: "hot", Chain: []segments.Spec{{Name: "matMul", Size: 100}}, Speed: 1,
		SLO:     gym.SLO{Kind: gym.LatencySLO, Target: 0.05},
		Load:    sim.Load{Shape: shape, Scale: 5000},
		Initial: sim.Allocation{Replicas: 1, CPU: 0.5, Memory: 1024 * gym.MiB},
	}
}

func TestBaselinesOnAnOverloadedApp(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	ctx := context.Background()
	res := map[string]Result{}
	for _, f := range Factories() {
		cl, err := sim.New(prof, []sim.App{overloaded(), overloaded()}, sim.WithStep(30*time.Second))
		require.NoError(t, err)
		calls := 0
		r, err := Run(ctx, cl, f, Config{Steps: 240, Seed: 1, Progress: func(int) { calls++ }})
		require.NoError(t, err)
		assert.Equal(t, 240, calls)
		assert.Equal(t, 2, r.Apps)
		assert.True(t, r.MeanReward >= 0 && r.MeanReward <= 2, "%s reward %g", f.Name, r.MeanReward)
		assert.InDelta(t, r.MeanReward*100, r.EpisodeReward, 1e-9)
		for _, u := range []float64{r.CPUUtil, r.MemoryUtil, r.SLOViolations, r.Dropped} {
			assert.True(t, u >= 0 && u <= 1, "%s: %+v", f.Name, r)
		}
		res[f.Name] = r
	}
	assert.Greater(t, res["static"].Dropped, 0.5, "half a core cannot serve 3 cores of demand")
	assert.Less(t, res["hpa"].Dropped, res["static"].Dropped/2, "HPA scales out")
	assert.Greater(t, res["hpa"].Replicas, 3.0)
	assert.Less(t, res["hpa+vpa"].Dropped, res["static"].Dropped/2)
	assert.Equal(t, 1.0, res["vpa"].Replicas, "VPA never scales out")
	assert.Greater(t, res["vpa"].CPUCores, 0.5, "VPA grows the CPU limit")
}

func TestRunErrors(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	cl, err := sim.New(prof, []sim.App{overloaded()})
	require.NoError(t, err)
	_, err = Run(context.Background(), cl, Factories()[0], Config{})
	assert.ErrorContains(t, err, "steps")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Run(ctx, cl, Factories()[0], Config{Steps: 3})
	assert.ErrorIs(t, err, context.Canceled)
}

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestReportGolden pins the Markdown table of a whole small run.
func TestReportGolden(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	rep := Report{Command: "go test ./evaluation/baselines", Apps: 2, Seed: 4, Steps: 120, StepSeconds: 30, Shapes: map[string]string{"flat": "test"}}
	for _, f := range Factories() {
		cl, err := sim.New(prof, []sim.App{overloaded(), overloaded()}, sim.WithStep(30*time.Second))
		require.NoError(t, err)
		r, err := Run(context.Background(), cl, f, Config{Steps: rep.Steps, Seed: rep.Seed})
		require.NoError(t, err)
		r.Seconds = 0
		rep.Results = append(rep.Results, r)
	}
	var b strings.Builder
	require.NoError(t, rep.WriteMarkdown(&b))
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), b.String())
}

func TestReport(t *testing.T) {
	rep := Report{Command: "aware run --apps 2", Apps: 2, Seed: 1, Steps: 10, StepSeconds: 30, Shapes: map[string]string{"nasa": "synthetic"},
		Results: []Result{{Baseline: "static", MeanReward: 1, EpisodeReward: 100, CPUUtil: 0.5}}}
	var b strings.Builder
	require.NoError(t, rep.WriteMarkdown(&b))
	assert.Contains(t, b.String(), "| static | 1.000 | 100.0 | 50.0% |")
	assert.Contains(t, b.String(), "nasa (synthetic)")
	rep.ShapeStats = map[string]ShapeStats{"nasa": StatsOf([]float64{0, 0.01, 1, 1.2, 1.79})}
	b.Reset()
	require.NoError(t, rep.WriteMarkdown(&b))
	assert.Contains(t, b.String(), "nasa (synthetic; p95 1.79 × the mean, 40.0 % of steps idle)")
	dir := t.TempDir()
	require.NoError(t, rep.Save(dir))
	for _, f := range []string{"results.json", "results.md"} {
		_, err := os.Stat(filepath.Join(dir, f))
		assert.NoError(t, err)
	}
}
