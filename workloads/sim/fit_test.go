package sim_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// recorded runs app for n steps under allocations a controller might set
// (replicas, CPU and memory moving around a feasible point, drawn from
// seed) and returns what each step reported, with the cluster.
func recorded(t *testing.T, prof *calibration.Profile, app sim.App, n int, seed uint64) (*sim.Cluster, []gym.Metrics) {
	t.Helper()
	c, err := sim.New(prof, []sim.App{app})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(seed, 1))
	var out []gym.Metrics
	a := app.Initial
	for i := range n {
		if i%5 == 0 {
			a = sim.Allocation{Replicas: 3 + r.IntN(6), CPU: 0.6 + r.Float64(), Memory: (384 + 512*r.Float64()) * gym.MiB}
		}
		c.Set(0, a)
		require.NoError(t, c.Advance(context.Background()))
		out = append(out, c.Metrics(0))
	}
	return c, out
}

// fitApp is a two-segment application under a daily-like load.
func fitApp(conc int) sim.App {
	shape := make([]float64, 96)
	for i := range shape {
		shape[i] = 1 + 0.7*math.Sin(2*math.Pi*float64(i)/96)
	}
	return sim.App{
		Name:        "fit",
		Chain:       []segments.Spec{{Name: "compress", Size: 131072}, {Name: "matMul", Size: 100}},
		Speed:       1,
		Noise:       0.05,
		SLO:         gym.SLO{Kind: gym.LatencySLO, Target: 0.2},
		Load:        sim.Load{Shape: shape, Scale: 250},
		Initial:     sim.Allocation{Replicas: 3, CPU: 1, Memory: 512 * gym.MiB},
		Concurrency: conc,
	}
}

// TestFitRecoversTheModel fits records of a simulated application and
// checks the fitted model against the true one and against held-back
// steps.
func TestFitRecoversTheModel(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	for _, conc := range []int{0, 4} {
		app := fitApp(conc)
		c, steps := recorded(t, prof, app, 400, 7)
		truth := c.Model(0)
		f, err := sim.Fit(steps[:300], conc, 30*time.Second)
		require.NoError(t, err)
		assert.InEpsilon(t, truth.CPU, f.Model.CPU, 0.05, "CPU per request")
		assert.InDelta(t, 0.002, f.IdleCPU, 0.01, "idle cores per pod")
		assert.InEpsilon(t, truth.BaseMemory, f.Model.BaseMemory, 0.1, "base working set")
		assert.InEpsilon(t, truth.MemoryPerRequest, f.Model.MemoryPerRequest, 0.5, "working set per concurrent request")
		assert.InDelta(t, app.Noise, f.Noise, 0.03, "measurement noise")
		assert.Positive(t, f.LatencyRows)

		e := f.Error(steps[300:], 30*time.Second)
		t.Logf("concurrency %d: held-back error %+v; fitted %+v; truth %+v", conc, e, f.Model, truth)
		assert.Less(t, e.CPU, 0.08)
		assert.Less(t, e.Memory, 0.08)
		assert.Less(t, e.LatencyP95, 0.15)
		assert.Less(t, e.LatencyP99, 0.15)

		// The fitted simulator runs, and agrees with the true one at an
		// allocation the records tried.
		fa, err := f.App("fit", app.SLO, arrivals(steps), app.Initial)
		require.NoError(t, err)
		at := sim.Allocation{Replicas: 4, CPU: 1, Memory: 512 * gym.MiB}
		want := sim.SteadyState(truth, at, 250, conc, 30)
		got := sim.SteadyState(*fa.Model, at, 250, conc, 30)
		assert.InEpsilon(t, want.LatencyP99, got.LatencyP99, 0.2)
		env, err := sim.NewEnv(prof, fa, f.Options()...)
		require.NoError(t, err)
		_, _, err = env.Reset(context.Background(), 1)
		require.NoError(t, err)
		_, r, _, _, _, err := env.Step(context.Background(), []float64{4, 1, 512 * gym.MiB})
		require.NoError(t, err)
		assert.Positive(t, r)
	}
}

func arrivals(steps []gym.Metrics) []float64 {
	out := make([]float64, len(steps))
	for i, m := range steps {
		out[i] = m.ArrivalRate
	}
	return out
}

// TestFitRefusesUnusableRecords: each part names what it lacked.
func TestFitRefusesUnusableRecords(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	_, steps := recorded(t, prof, fitApp(0), 60, 3)

	_, err = sim.Fit(steps[:5], 0, 30*time.Second)
	assert.ErrorContains(t, err, "cpu: ")

	throttled := append([]gym.Metrics(nil), steps...)
	for i := range throttled {
		throttled[i].CPUUsage = float64(throttled[i].Replicas) * throttled[i].CPULimit
	}
	_, err = sim.Fit(throttled, 0, 30*time.Second)
	assert.ErrorContains(t, err, "below 90 % of the quota")

	full := append([]gym.Metrics(nil), steps...)
	for i := range full {
		full[i].MemoryPeak = full[i].MemoryLimit
	}
	_, err = sim.Fit(full, 0, 30*time.Second)
	assert.ErrorContains(t, err, "memory: ")

	late := append([]gym.Metrics(nil), steps...)
	for i := range late {
		late[i].DroppedRate = 1
	}
	_, err = sim.Fit(late, 0, 30*time.Second)
	assert.ErrorContains(t, err, "latency: ")

	nan := append([]gym.Metrics(nil), steps...)
	for i := range nan {
		nan[i].CPUUsage = math.NaN()
	}
	_, err = sim.Fit(nan, 0, 30*time.Second)
	assert.ErrorContains(t, err, "cpu: 0 steps")

	_, err = sim.Fit(steps, -1, 30*time.Second)
	assert.ErrorContains(t, err, "concurrency")
	f, err := sim.Fit(steps, 0, 30*time.Second)
	require.NoError(t, err)
	_, err = f.App("x", gym.SLO{}, make([]float64, 10), sim.Allocation{Replicas: 1, CPU: 1, Memory: gym.MiB})
	assert.ErrorContains(t, err, "no load")
	_, err = f.App("x", gym.SLO{}, []float64{1, math.Inf(1)}, sim.Allocation{Replicas: 1, CPU: 1, Memory: gym.MiB})
	assert.ErrorContains(t, err, "step 1")
}
