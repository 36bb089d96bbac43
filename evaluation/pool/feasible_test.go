package pool

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/internal/quantile"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// TestEverySLOIsFeasible checks the generator's SLOs are achievable by
// construction: for each of the 1000 default apps, some allocation within
// the action bounds meets its SLO at its trace's p95 load (the real traces
// when ../shared/traces is present, else their synthetic stand-ins).
func TestEverySLOIsFeasible(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	apps, err := generator.Generate(generator.DefaultOptions(), prof)
	require.NoError(t, err)
	sh, err := generator.LoadShapes("../../../shared/traces", 30*time.Second, 1)
	require.NoError(t, err)
	t.Logf("shapes: %v", sh.Origin)
	simApps, err := generator.SimApps(apps, sh)
	require.NoError(t, err)
	b := gym.DefaultBounds()
	var cores []float64
	for i, a := range simApps {
		load := quantile.NearestRank(sh.Shapes[apps[i].Load.Source], 0.95) * a.Load.Scale
		f, err := Feasible(prof, a, load, b, 30, sim.DefaultOverheads())
		require.NoError(t, err)
		if !assert.True(t, f.OK, "%s (%v, SLO %v) has no allocation within %+v meeting its SLO at its p95 load %.1f req/s", a.Name, apps[i].Spec.Segments, a.SLO, b, load) {
			continue
		}
		if a.SLO.Kind == gym.LatencySLO {
			assert.LessOrEqual(t, f.P99, a.SLO.Target, a.Name)
		}
		cores = append(cores, float64(f.Best.Replicas)*f.Best.CPU)
	}
	q := quantilesOf(cores)
	t.Logf("cores of the cheapest feasible allocation at p95 load: p10 %.2f, p50 %.2f, p90 %.2f, max %.2f", q[0], q[1], q[2], q[3])
}

func quantilesOf(x []float64) [4]float64 {
	return [4]float64{quantile.NearestRank(x, 0.1), quantile.NearestRank(x, 0.5), quantile.NearestRank(x, 0.9), quantile.NearestRank(x, 1)}
}

func TestFeasible(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	app := sim.App{Name: "m", Chain: []segments.Spec{{Name: "matMul", Size: 75}}, Speed: 1, Concurrency: 5}
	m, err := sim.NewModel(prof, app.Chain, 1, sim.DefaultOverheads())
	require.NoError(t, err)
	b := gym.DefaultBounds()
	capacity := float64(b.MaxReplicas) * b.MaxCPU / m.CPU // requests/s at 20 × 2.048 cores

	tests := []struct {
		name string
		slo  gym.SLO
		load float64
		ok   bool
	}{
		{"idle, no SLO", gym.SLO{}, 0, true},
		{"loose latency SLO", gym.SLO{Kind: gym.LatencySLO, Target: 10 * m.P99}, 0.5 * capacity, true},
		{"below the isolated p99", gym.SLO{Kind: gym.LatencySLO, Target: 0.9 * m.P99}, 1, false},
		{"beyond the largest allocation", gym.SLO{Kind: gym.ThroughputSLO, Target: 1}, 1.01 * capacity, false},
		{"throughput within it", gym.SLO{Kind: gym.ThroughputSLO, Target: 1}, 0.9 * capacity, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := app
			a.SLO = tt.slo
			f, err := Feasible(prof, a, tt.load, b, 30, sim.DefaultOverheads())
			require.NoError(t, err)
			assert.Equal(t, tt.ok, f.OK, "%+v", f)
			if f.OK {
				// No cheaper allocation meets it: one replica fewer fails.
				if f.Best.Replicas > 1 {
					st := sim.SteadyState(m, sim.Allocation{Replicas: f.Best.Replicas - 1, CPU: f.Best.CPU}, tt.load, 5, 30)
					assert.False(t, st.Stable() && (tt.slo.Kind != gym.LatencySLO || st.LatencyP99 <= tt.slo.Target), fmt.Sprintf("%+v", st))
				}
			}
		})
	}

	_, err = Feasible(prof, sim.App{Name: "x", Chain: []segments.Spec{{Name: "nope", Size: 1}}, Speed: 1}, 1, b, 30, sim.DefaultOverheads())
	assert.ErrorContains(t, err, "x")
}
