package validation

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	assert.GreaterOrEqual(t, got.Memory, m.BaseMemory, "a pod's working set is at least its base")
	assert.Less(t, got.Memory, m.BaseMemory+m.MemoryPerRequest, "at 4 % utilisation about one request is in the pod")

	_, err = Simulate(context.Background(), prof, Case{App: "x", Chain: chain, CPU: 1})
	assert.ErrorContains(t, err, "no load")
}

// The simulated server runs at most c.Concurrency requests at once: with
// four slots, 100 ms requests complete at most 40 times a second, and the
// pod holds the working sets of the four running.
func TestSimulateConcurrency(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	chain := []segments.Spec{{Name: "sleep", Size: 100}, {Name: "matMul", Size: 100}}
	m, err := sim.NewModel(prof, chain, 1, sim.DefaultOverheads())
	require.NoError(t, err)
	tests := []struct {
		name           string
		concurrency    int
		wantThroughput float64
	}{
		{"unbounded", 0, 300},
		{"four slots", 4, 4 / m.P50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Simulate(context.Background(), prof, Case{App: "x", Chain: chain, CPU: 1, Rates: constant(300, 10), Concurrency: tt.concurrency})
			require.NoError(t, err)
			assert.InEpsilon(t, tt.wantThroughput, got.Throughput, 0.02)
			assert.GreaterOrEqual(t, got.Memory, m.BaseMemory+3*m.MemoryPerRequest, "at least four requests' working sets")
		})
	}
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
	const mib = 1 << 20
	rows := []Row{
		{Case: Case{App: "a", CPU: 1, Rates: constant(10, 2), Concurrency: 4}, Method: Method{Quota: "q", MemorySource: MemoryVmRSS},
			Real: Measured{CPU: 1, Throughput: 10, P95: 0.1, Memory: 40 * mib}, Sim: Measured{CPU: 1.1, Throughput: 10, P95: 0.2, Memory: 30 * mib}},
		{Case: Case{App: "b", CPU: 1, Rates: constant(10, 2)}, Method: Method{Quota: "q", MemorySource: MemoryVmRSS},
			Real: Measured{CPU: 1, Throughput: 10, P95: 0.1, Memory: 40 * mib}, Sim: Measured{CPU: 0.8, Throughput: 9, P95: 0.1, Memory: 44 * mib}},
		{Case: Case{App: "c", CPU: 1, Rates: constant(10, 2)}, Method: Method{Quota: "q", MemorySource: MemoryVmRSS},
			Real: Measured{CPU: 1, Throughput: 10, P95: 0.1, Memory: 40 * mib}, Sim: Measured{CPU: 1, Throughput: 10, P95: 0.12, Memory: 40 * mib}},
	}
	s := Summary(rows)
	assert.InDelta(t, 0.1, s.CPU, 1e-9)
	assert.InDelta(t, 0, s.Throughput, 1e-9)
	assert.InDelta(t, 0.2, s.P95, 1e-9)
	assert.InDelta(t, 0.1, s.Memory, 1e-9)
	var b strings.Builder
	require.NoError(t, WriteMarkdown(&b, rows))
	assert.Contains(t, b.String(), "CPU 10.0% (target ≤ 15%: meets)")
	assert.Contains(t, b.String(), "p95 latency 20.0% (≤ 30%: meets)")
	assert.Contains(t, b.String(), "memory 10.0% (≤ 20%: meets).")
	assert.Contains(t, b.String(), "| a |  | 1.00 | 4 | q |")
	assert.Contains(t, b.String(), "| VmRSS | 40.0 / 30.0 | 25.0% |")
	assert.Contains(t, b.String(), "| b |  | 1.00 | unbounded | q |")
	e := Row{Real: Measured{}, Sim: Measured{P95: 1}}.Errors()
	assert.Equal(t, 1.0, e.P95, "a simulated value against a zero measurement is a 100 % error")
	assert.Zero(t, e.Memory)

	b.Reset()
	require.NoError(t, WriteMarkdown(&b, rows[1:2]))
	assert.Contains(t, b.String(), "memory 10.0% (≤ 20%: meets)")
	b.Reset()
	require.NoError(t, WriteMarkdown(&b, rows[:1]))
	assert.Contains(t, b.String(), "memory 25.0% (≤ 20%: misses)")
}

func TestCases(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	src, err := SyntheticSource(3)
	require.NoError(t, err)
	picks := []Pick{{"a", []segments.Spec{{Name: "matMul", Size: 100}}, 6}, {"b", []segments.Spec{{Name: "json2yaml", Size: 250}}, 0}}
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
	assert.Equal(t, []int{6, 6, 0, 0}, []int{cs[0].Concurrency, cs[1].Concurrency, cs[2].Concurrency, cs[3].Concurrency},
		"each case runs with its application's concurrency")

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

func TestProcessRSS(t *testing.T) {
	before, err := processRSS(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, before, float64(1<<20), "a Go test binary holds more than a MiB")
	hold := make([]byte, 64<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	after, err := processRSS(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, after-before, float64(60<<20), "touched pages are resident")
	_ = hold[len(hold)-1]
	_, err = processRSS(1 << 30)
	assert.Error(t, err)

	s := sampleRSS(os.Getpid(), time.Millisecond)
	mean, err := s.mean()
	require.NoError(t, err)
	assert.Greater(t, mean, before/2)
	_, err = sampleRSS(1<<30, time.Millisecond).mean()
	assert.Error(t, err, "a process that is gone is an error")
}

// TestRealAgainstSimulator runs the whole path for real: the aware binary
// serves a light application under a CPU limit while the load generator
// replays a constant load, and the simulator's CPU and throughput must be
// near the measurement. The simulator uses the committed profile with the
// application's segment re-measured on this host by the same binary
// (`aware workload calibrate one`): the committed profile describes the
// machine it was measured on, and on another processor a segment's CPU
// cost differs by up to 2 × (docs/simulator.md), which is a calibration
// question, not what this test checks.
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
	seg := segments.Spec{Name: "matMul", Size: 100}
	opts, err := json.Marshal(calibration.DefaultOptions())
	require.NoError(t, err)
	measure := exec.Command(exe, "workload", "calibrate", "one", "--segment", seg.Name, "--size", strconv.Itoa(seg.Size), "--options", string(opts))
	measure.Stderr = os.Stderr
	out, err = measure.Output()
	require.NoError(t, err)
	var here calibration.Entry
	require.NoError(t, json.Unmarshal(out, &here))
	local := *prof
	local.Entries = slices.Clone(prof.Entries)
	i := slices.IndexFunc(local.Entries, func(e calibration.Entry) bool { return e.Segment == seg.Name && e.Size == seg.Size })
	require.GreaterOrEqual(t, i, 0)
	t.Logf("%s here: %.3g CPU-s per request (profile %.3g)", seg.Name, here.CPUSeconds, local.Entries[i].CPUSeconds)
	local.Entries[i] = here
	prof = &local
	c := Case{App: "smoke", Chain: []segments.Spec{seg}, CPU: 0.5, Rates: constant(200, 5), Trace: "constant", Concurrency: 4}
	ctx := context.Background()
	real, method, err := Real(ctx, RealConfig{Exe: exe, Dir: t.TempDir(), Warmup: time.Second, Seed: 1}, c)
	require.NoError(t, err)
	t.Logf("method: %+v; real %+v", method, real)
	assert.Equal(t, MemoryVmRSS, method.MemorySource)
	simulated, err := Simulate(ctx, prof, c)
	require.NoError(t, err)
	row := Row{Case: c, Method: method, Real: real, Sim: simulated}
	e := row.Errors()
	assert.Less(t, e.Throughput, 0.05, "throughput: real %g, sim %g", real.Throughput, simulated.Throughput)
	assert.Less(t, e.CPU, 0.5, "CPU: real %g, sim %g", real.CPU, simulated.CPU)
	assert.Less(t, e.Memory, 0.3, "memory: real %g, sim %g", real.Memory, simulated.Memory)
}

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		back string
	}{
		{"0", []int{0}, "0"},
		{"0-1", []int{0, 1}, "0-1"},
		{"0-3,6,8-9", []int{0, 1, 2, 3, 6, 8, 9}, "0-3,6,8-9"},
		{"2,3,5", []int{2, 3, 5}, "2-3,5"},
	} {
		got, err := parseCPUList(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.back, formatCPUList(got), tc.in)
	}
	for _, bad := range []string{"", "a", "3-1", "1-x"} {
		_, err := parseCPUList(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestPlacementNil(t *testing.T) {
	var p *Placement
	g, err := p.pin(1, "x")
	assert.NoError(t, err)
	assert.Nil(t, g)
	assert.NoError(t, p.Release())
}

func TestRepeats(t *testing.T) {
	runs := []Measured{{CPU: 1, Throughput: 10, P95: 0.010, Memory: 5, Client: 100e-6}, {CPU: 3, Throughput: 10, P95: 0.040, Memory: 4, Client: 200e-6}, {CPU: 2, Throughput: 11, P95: 0.020, Memory: 6, Client: 120e-6}}
	assert.Equal(t, Measured{CPU: 2, Throughput: 10, P95: 0.020, Memory: 5, Client: 120e-6}, MedianOf(runs))

	_, ok := Repeatability([]Row{{Real: runs[0]}})
	assert.False(t, ok, "no repeated row")
	rows := []Row{
		{Real: MedianOf(runs), Repeats: runs},                                          // spread (0.04−0.01)/0.02 = 1.5
		{Real: runs[0], Repeats: []Measured{{P95: 0.010}, {P95: 0.011}}},               // 0.1/0.0105
		{Real: runs[0], Repeats: []Measured{{P95: 0.010}, {P95: 0.010}, {P95: 0.010}}}, // 0
	}
	spread, ok := Repeatability(rows)
	require.True(t, ok)
	assert.InDelta(t, 0.001/0.0105, spread, 1e-12)

	var b strings.Builder
	c := Case{App: "a", CPU: 1, Rates: []float64{1}, Trace: "x"}
	for i := range rows {
		rows[i].Case, rows[i].Sim = c, rows[i].Real
	}
	require.NoError(t, WriteMarkdown(&b, rows))
	assert.Contains(t, b.String(), "Real runs are medians of 3 repeats; the real p95's spread between repeats of a case, (max − min) / median, is 9.5% (median over cases).")
	// Rows 2 and 3 carry runs[0]'s client figure (100 µs at 10 req/s), row
	// 1 the median's (120 µs at 10 req/s).
	assert.Contains(t, b.String(), "The load generator spent 107 µs CPU per request over all cases' requests (100–120 µs per case")
}

func TestSweepStale(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"aware-validate-10-rest", "aware-validate-10-app-0001-500m", "aware-validate-20-rest", "aware-validate-x-rest", "other-10-rest"} {
		require.NoError(t, os.Mkdir(filepath.Join(root, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "aware-validate-30-file"), nil, 0o644))
	sweepStale(root, "aware-validate-", func(pid int) bool { return pid == 20 })
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	assert.Equal(t, []string{"aware-validate-20-rest", "aware-validate-30-file", "aware-validate-x-rest", "other-10-rest"}, left, "only the dead validation's directories go")
}
