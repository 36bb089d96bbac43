package validation

import (
	"context"
	"math"
	"os"
	"os/exec"
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
	"github.com/aware-autoscaler/aware/workloads/trace"
)

func constant(rate float64, n int) []float64 {
	r := make([]float64, n)
	for i := range r {
		r[i] = rate
	}
	return r
}

func TestSimulateConstantLoad(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	chain := []segments.Spec{{Name: "matMul", Size: 100}}
	m, err := sim.NewModel(prof, chain, 1, sim.DefaultOverheads())
	require.NoError(t, err)
	got, err := Simulate(context.Background(), prof, Case{App: "x", Chain: chain, CPU: 1, Rates: constant(100, 10)})
	require.NoError(t, err)
	assert.InDelta(t, 100*m.CPU+0.002, got.CPU, 1e-9)
	assert.InDelta(t, 100, got.Throughput, 1e-9)
	assert.GreaterOrEqual(t, got.P95, m.P95)

	_, err = Simulate(context.Background(), prof, Case{App: "x", Chain: chain, CPU: 1})
	assert.ErrorContains(t, err, "no load")
}

func TestMixtureQuantile(t *testing.T) {
	one := gym.Metrics{ProcessedRate: 10, LatencyP50: 0.01, LatencyP95: 0.02, LatencyP99: 0.03}
	assert.InDelta(t, 0.02, mixtureQuantile([]gym.Metrics{one, one, one}, 0.95), 1e-9)
	assert.InDelta(t, 0.01, mixtureQuantile([]gym.Metrics{one}, 0.5), 1e-9)
	slow := gym.Metrics{ProcessedRate: 10, LatencyP50: 1, LatencyP95: 2, LatencyP99: 3}
	mix := mixtureQuantile([]gym.Metrics{one, slow}, 0.95)
	assert.Greater(t, mix, 1.0, "half the requests are slow: the mixture's p95 is the slow step's p90")
	assert.Less(t, mix, 2.0)
	assert.Zero(t, mixtureQuantile([]gym.Metrics{{}}, 0.95))
}

func TestSummaryAndTable(t *testing.T) {
	rows := []Row{
		{Case: Case{App: "a", CPU: 1, Rates: constant(10, 2)}, Real: Measured{CPU: 1, Throughput: 10, P95: 0.1}, Sim: Measured{CPU: 1.1, Throughput: 10, P95: 0.2}},
		{Case: Case{App: "b", CPU: 1, Rates: constant(10, 2)}, Real: Measured{CPU: 1, Throughput: 10, P95: 0.1}, Sim: Measured{CPU: 0.8, Throughput: 9, P95: 0.1}},
		{Case: Case{App: "c", CPU: 1, Rates: constant(10, 2)}, Real: Measured{CPU: 1, Throughput: 10, P95: 0.1}, Sim: Measured{CPU: 1, Throughput: 10, P95: 0.12}},
	}
	s := Summary(rows)
	assert.InDelta(t, 0.1, s.CPU, 1e-9)
	assert.InDelta(t, 0, s.Throughput, 1e-9)
	assert.InDelta(t, 0.2, s.P95, 1e-9)
	var b strings.Builder
	require.NoError(t, WriteMarkdown(&b, rows))
	assert.Contains(t, b.String(), "CPU 10.0% (target ≤ 15%: meets)")
	assert.Contains(t, b.String(), "p95 latency 20.0% (≤ 30%: meets)")
	_, _, p := Row{Real: Measured{}, Sim: Measured{P95: 1}}.Errors()
	assert.Equal(t, 1.0, p, "a simulated value against a zero measurement is a 100 % error")
}

func TestCases(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	src, err := SyntheticSource(3)
	require.NoError(t, err)
	picks := []Pick{{"a", []segments.Spec{{Name: "matMul", Size: 100}}}, {"b", []segments.Spec{{Name: "json2yaml", Size: 250}}}}
	plan := Plan{CPUs: []float64{0.5, 1}, Utilisations: []float64{0.6, 0.4}, Window: 20 * time.Second, MaxRate: 1000, Seed: 9}
	cs, err := Cases(prof, picks, []Source{src}, plan)
	require.NoError(t, err)
	require.Len(t, cs, 4)
	again, err := Cases(prof, picks, []Source{src}, plan)
	require.NoError(t, err)
	assert.Equal(t, cs, again, "deterministic")
	m, _ := sim.NewModel(prof, picks[0].Chain, 1, sim.DefaultOverheads())
	var mean float64
	for _, r := range cs[0].Rates {
		mean += r / 20
	}
	assert.InEpsilon(t, 0.6*0.5/m.CPU, mean, 1e-9, "the window is scaled to the planned utilisation")
	assert.LessOrEqual(t, cs[3].Rates[0], 1000*20.0)

	_, err = Cases(prof, picks, nil, plan)
	assert.ErrorContains(t, err, "no load sources")
	plan.Utilisations = plan.Utilisations[:1]
	_, err = Cases(prof, picks, []Source{src}, plan)
	assert.ErrorContains(t, err, "utilisations")
	_, err = Cases(prof, picks, []Source{{Name: "short", Series: trace.Series{Step: time.Second, Values: []float64{1}}}}, Plan{CPUs: []float64{1}, Utilisations: []float64{1}, Window: 5 * time.Second})
	assert.ErrorContains(t, err, "shorter")
}

func TestLoadSourcesAbsent(t *testing.T) {
	s, err := LoadSources(filepath.Join(t.TempDir(), "nope"))
	require.NoError(t, err)
	assert.Empty(t, s)
}

func TestProcessCPU(t *testing.T) {
	x := 0.0
	for i := range 20_000_000 {
		x += math.Sqrt(float64(i))
	}
	c, err := processCPU(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, c, "%g", x)
	_, err = processCPU(1 << 30)
	assert.Error(t, err)
}

// TestRealAgainstSimulator runs the whole path for real: the aware binary
// serves a light application under a CPU limit while the load generator
// replays a constant load, and the simulator's CPU and throughput must be
// near the measurement.
func TestRealAgainstSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the workload server")
	}
	exe := filepath.Join(t.TempDir(), "aware")
	build := exec.Command("go", "build", "-o", exe, "github.com/aware-autoscaler/aware/cmd/aware")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	prof, err := calibration.Default()
	require.NoError(t, err)
	c := Case{App: "smoke", Chain: []segments.Spec{{Name: "matMul", Size: 100}}, CPU: 0.5, Rates: constant(200, 5), Trace: "constant"}
	ctx := context.Background()
	real, quota, err := Real(ctx, RealConfig{Exe: exe, Dir: t.TempDir(), Warmup: time.Second, Seed: 1}, c)
	require.NoError(t, err)
	t.Logf("quota: %s; real %+v", quota, real)
	simulated, err := Simulate(ctx, prof, c)
	require.NoError(t, err)
	row := Row{Case: c, Quota: quota, Real: real, Sim: simulated}
	cpu, tput, _ := row.Errors()
	assert.Less(t, tput, 0.05, "throughput: real %g, sim %g", real.Throughput, simulated.Throughput)
	assert.Less(t, cpu, 0.5, "CPU: real %g, sim %g", real.CPU, simulated.CPU)
}
