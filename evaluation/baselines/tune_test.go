package baselines

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// steadyApp needs about 3 cores of a constant load, without noise, with a
// latency SLO of its p99 on one core at util.
func steadyApp(t *testing.T, prof *calibration.Profile, util, slack float64) sim.App {
	t.Helper()
	chain := []segments.Spec{{Name: "matMul", Size: 100}}
	m, err := sim.NewModel(prof, chain, 1, sim.DefaultOverheads())
	require.NoError(t, err)
	ref := sim.SteadyState(m, sim.Allocation{Replicas: 1, CPU: 1}, util/m.CPU, 4, 30)
	require.True(t, ref.Stable())
	shape := make([]float64, 500)
	for i := range shape {
		shape[i] = 1
	}
	return sim.App{
		Name: "steady", Chain: chain, Speed: 1, Concurrency: 4,
		SLO:     gym.SLO{Kind: gym.LatencySLO, Target: slack * ref.LatencyP99},
		Load:    sim.Load{Shape: shape, Offset: 200, Scale: 3 / m.CPU},
		Initial: sim.Allocation{Replicas: 3, CPU: 1, Memory: 1024 * gym.MiB},
	}
}

func TestTune(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	ctx := context.Background()
	cfg := TuneConfig{Targets: DefaultTuneTargets(), Steps: 120, Warmup: 20, MaxViolations: 0.01, Seed: 1, Step: 30 * time.Second}
	app := steadyApp(t, prof, 0.55, 1)
	impossible := app
	impossible.Name, impossible.SLO.Target = "impossible", 0.5*app.SLO.Target

	got, err := Tune(ctx, prof, []sim.App{app, impossible}, cfg)
	require.NoError(t, err)
	best := got[0]
	require.True(t, best.Met, "%+v", best)
	assert.LessOrEqual(t, best.Violations, cfg.MaxViolations)
	assert.Greater(t, best.Target, 0.2, "some targets above the lowest meet it")
	assert.Less(t, best.Target, 0.9, "not every target meets it")
	assert.False(t, got[1].Met, "%+v", got[1])
	assert.Greater(t, got[1].Violations, cfg.MaxViolations)

	// Best is the highest: alone, the next candidate fails and Best meets
	// (no noise, so the application does not depend on its place in the
	// tuning cluster).
	next := cfg
	next.Targets = []float64{best.Target + 0.05}
	again, err := Tune(ctx, prof, []sim.App{app}, next)
	require.NoError(t, err)
	assert.False(t, again[0].Met, "%+v", again[0])
	next.Targets = []float64{best.Target}
	again, err = Tune(ctx, prof, []sim.App{app}, next)
	require.NoError(t, err)
	assert.Equal(t, best, again[0])

	// Deterministic.
	twice, err := Tune(ctx, prof, []sim.App{app, impossible}, cfg)
	require.NoError(t, err)
	assert.Equal(t, got, twice)
}

func TestTuneErrors(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	ok := TuneConfig{Steps: 10, Warmup: 1, MaxViolations: 0.01, Step: 30 * time.Second}
	app := overloaded()
	tests := []struct {
		name string
		edit func(*TuneConfig)
		apps []sim.App
		want string
	}{
		{"no apps", func(*TuneConfig) {}, nil, "apps: none"},
		{"descending targets", func(c *TuneConfig) { c.Targets = []float64{0.5, 0.4} }, []sim.App{app}, "targets[1]: 0.4"},
		{"target above 1", func(c *TuneConfig) { c.Targets = []float64{1.5} }, []sim.App{app}, "targets[0]: 1.5"},
		{"empty targets", func(c *TuneConfig) { c.Targets = []float64{} }, []sim.App{app}, "targets: empty"},
		{"warmup", func(c *TuneConfig) { c.Warmup = 10 }, []sim.App{app}, "warmup 10"},
		{"max violations", func(c *TuneConfig) { c.MaxViolations = math.NaN() }, []sim.App{app}, "maxViolations"},
		{"step", func(c *TuneConfig) { c.Step = 0 }, []sim.App{app}, "step 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			_, err := Tune(context.Background(), prof, tt.apps, c)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Tune(ctx, prof, []sim.App{app}, ok)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestTunePool(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	opts := generator.DefaultOptions()
	opts.Apps = 3
	apps, err := generator.Generate(opts, prof)
	require.NoError(t, err)
	simApps := make([]sim.App, len(apps))
	for i := range apps {
		simApps[i] = steadyApp(t, prof, 0.5, 1.5)
	}
	cfg := TuneConfig{Steps: 60, Warmup: 10, MaxViolations: 0.02, Seed: 1, Step: 30 * time.Second}
	require.NoError(t, TunePool(context.Background(), prof, apps, simApps, cfg))
	for _, a := range apps {
		require.NotNil(t, a.Tuning)
		assert.Equal(t, "30m0s", a.Tuning.Window)
		assert.Equal(t, 0.02, a.Tuning.MaxViolations)
		assert.Contains(t, DefaultTuneTargets(), a.Profile.Targets.CPU)
		assert.NoError(t, a.Validate())
	}
	assert.ErrorContains(t, TunePool(context.Background(), prof, apps, simApps[:1], cfg), "3 apps but 1")
}
