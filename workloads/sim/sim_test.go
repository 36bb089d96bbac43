package sim

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

func profile(t testing.TB) *calibration.Profile {
	t.Helper()
	p, err := calibration.Default()
	require.NoError(t, err)
	return p
}

// flat is a constant load shape.
func flat(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

func testApp(rate float64, alloc Allocation) App {
	return App{
		Name:    "t",
		Chain:   []segments.Spec{{Name: "compress", Size: 131072}, {Name: "matMul", Size: 100}},
		Speed:   1,
		SLO:     gym.SLO{Kind: gym.LatencySLO, Target: 0.1},
		Load:    Load{Shape: flat(100), Scale: rate},
		Initial: alloc,
	}
}

func TestModelFromProfile(t *testing.T) {
	p := profile(t)
	ov := DefaultOverheads()
	chain := []segments.Spec{{Name: "compress", Size: 131072}, {Name: "sleep", Size: 100}}
	m, err := NewModel(p, chain, 1, ov)
	require.NoError(t, err)
	c, _ := p.Lookup("compress", 131072)
	s, _ := p.Lookup("sleep", 100)
	assert.InDelta(t, c.CPUSeconds+s.CPUSeconds+ov.CPU, m.CPU, 1e-12)
	assert.InDelta(t, 0.1, m.Wait, 0.005, "sleep waits off-CPU")
	assert.Less(t, m.P50, m.P95)
	assert.Less(t, m.P95, m.P99)

	slow, err := NewModel(p, chain, 0.5, ov)
	require.NoError(t, err)
	assert.InDelta(t, 2*m.CPU, slow.CPU, 1e-12, "half speed doubles CPU-seconds")

	// Interpolation between calibrated sizes is monotone.
	a, _ := NewModel(p, []segments.Spec{{Name: "compress", Size: 131072}}, 1, ov)
	mid, err := NewModel(p, []segments.Spec{{Name: "compress", Size: 200000}}, 1, ov)
	require.NoError(t, err)
	b, _ := NewModel(p, []segments.Spec{{Name: "compress", Size: 262144}}, 1, ov)
	assert.Less(t, a.CPU, mid.CPU)
	assert.Less(t, mid.CPU, b.CPU)

	for _, bad := range [][]segments.Spec{nil, {{Name: "nope", Size: 1}}, {{Name: "compress", Size: 0}}} {
		_, err := NewModel(p, bad, 1, ov)
		assert.Error(t, err, "%v", bad)
	}
	_, err = NewModel(p, chain, 0, ov)
	assert.ErrorContains(t, err, "speed")
}

func TestQueueing(t *testing.T) {
	tests := []struct {
		name      string
		got, want float64
	}{
		{"erlangC c=1 is rho", erlangC(1, 0.6), 0.6},
		{"erlangC c=2 a=1", erlangC(2, 1), 1.0 / 3},
		{"M/M/1 waits with probability rho", first(queueWait(1, 0.5, 1)), 0.5},
		{"M/M/1 mean wait rho/(1-rho)", second(queueWait(1, 0.5, 1)), 1},
		{"M/D/1 waits half as long", second(queueWait(1, 0.5, 0)), 0.5},
		{"two cores", second(queueWait(2, 0.5, 1)), (1.0 / 3) / (2 * 0.5)},
		{"idle", second(queueWait(1.5, 0, 1)), 0},
		{"no wait below 1-pw", waitQuantile(0.4, 0.5, 1), 0},
		{"exponential tail", waitQuantile(0.95, 0.5, 1), 2 * math.Log(10)},
		{"throttled short request", throttled(0.005, 0.5), 0.005},
		{"throttled long request", throttled(0.12, 0.5), 0.22},
		{"throttled unlimited", throttled(0.12, 2), 0.12},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, tt.got, 1e-9, tt.name)
	}
	assert.Less(t, second(queueWait(1.5, 0.8, 1)), second(queueWait(1, 0.8, 1)), "more cores queue less")
	assert.Greater(t, second(queueWait(1.5, 0.8, 1)), second(queueWait(2, 0.8, 1)))
}

func run(t *testing.T, app App, steps int, opts ...Option) (*Cluster, []gym.Metrics) {
	t.Helper()
	c, err := New(profile(t), []App{app}, opts...)
	require.NoError(t, err)
	var ms []gym.Metrics
	for range steps {
		c.Set(0, app.Initial)
		require.NoError(t, c.Advance(context.Background()))
		ms = append(ms, c.Metrics(0))
	}
	return c, ms
}

func TestConservationAndRegimes(t *testing.T) {
	// compress 128 KiB + matMul 100 ≈ 8.2 ms of CPU per request: one core
	// serves about 120 req/s.
	tests := []struct {
		name        string
		rate        float64
		alloc       Allocation
		violates    bool
		drops       bool
		minCPUUtil  float64
		maxCPUUtil  float64
		maxBacklogS float64
	}{
		{"generous", 20, Allocation{2, 1, 512 * gym.MiB}, false, false, 0.05, 0.15, 0},
		{"busy", 100, Allocation{1, 1, 512 * gym.MiB}, true, false, 0.8, 1, 0},
		{"overloaded", 400, Allocation{1, 1, 3072 * gym.MiB}, true, true, 0.95, 1, 10},
		{"scaled out", 400, Allocation{5, 1, 512 * gym.MiB}, false, false, 0.6, 0.8, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := testApp(tt.rate, tt.alloc)
			c, ms := run(t, app, 20)
			var arrived, done, dropped float64
			for _, m := range ms {
				arrived += m.ArrivalRate * c.StepSeconds()
				done += m.ProcessedRate * c.StepSeconds()
				dropped += m.DroppedRate * c.StepSeconds()
			}
			assert.InDelta(t, arrived, done+dropped+c.st[0].backlog, 1e-6*arrived, "requests are conserved")
			last := ms[len(ms)-1]
			cpu, _ := gym.Utilization(last)
			assert.GreaterOrEqual(t, cpu, tt.minCPUUtil)
			assert.LessOrEqual(t, cpu, tt.maxCPUUtil)
			assert.Equal(t, tt.violates, gym.SLOPreservation(app.SLO, last) < 1, "p99 %.3fs", last.LatencyP99)
			assert.Equal(t, tt.drops, last.DroppedRate > 0)
			assert.LessOrEqual(t, c.st[0].backlog/math.Max(last.ProcessedRate, 1), tt.maxBacklogS+1e-9)
			assert.LessOrEqual(t, last.LatencyP50, last.LatencyP95)
			assert.LessOrEqual(t, last.LatencyP95, last.LatencyP99)
		})
	}
}

func TestOOM(t *testing.T) {
	// A limit below the base working set: pods crash as they start.
	app := testApp(20, Allocation{2, 1, 8 * gym.MiB})
	_, ms := run(t, app, 5, WithBounds(gym.Bounds{MinReplicas: 1, MaxReplicas: 20, MinCPU: 0.1, MaxCPU: 4, MinMemory: 1 * gym.MiB, MaxMemory: 8192 * gym.MiB}))
	assert.Equal(t, 2, ms[0].OOMKills)
	assert.Equal(t, 0, ms[0].ReadyReplicas)
	assert.Positive(t, ms[1].DroppedRate)

	// A crash loop backs off: 10 s, doubling, at most 5 min between restarts.
	_, ms = run(t, app, 40, WithBounds(gym.Bounds{MinReplicas: 1, MaxReplicas: 20, MinCPU: 0.1, MaxCPU: 4, MinMemory: 1 * gym.MiB, MaxMemory: 8192 * gym.MiB}))
	var killSteps []int
	for i, x := range ms {
		if x.OOMKills > 0 {
			killSteps = append(killSteps, i)
		}
	}
	require.Greater(t, len(killSteps), 4)
	assert.Less(t, len(killSteps), 12, "%v", killSteps)
	for i := 2; i < len(killSteps); i++ {
		assert.GreaterOrEqual(t, killSteps[i]-killSteps[i-1], killSteps[i-1]-killSteps[i-2], "restarts back off: %v", killSteps)
	}
	assert.LessOrEqual(t, killSteps[len(killSteps)-1]-killSteps[len(killSteps)-2], 11, "at most 5 min apart")

	// Overload grows the in-flight working set past a tight limit.
	m, err := NewModel(profile(t), app.Chain, 1, DefaultOverheads())
	require.NoError(t, err)
	tight := testApp(400, Allocation{1, 1, m.BaseMemory + 50*m.MemoryPerRequest})
	_, ms = run(t, tight, 10, WithBounds(gym.Bounds{MinReplicas: 1, MaxReplicas: 20, MinCPU: 0.1, MaxCPU: 4, MinMemory: 1 * gym.MiB, MaxMemory: 8192 * gym.MiB}))
	kills := 0
	for _, x := range ms {
		kills += x.OOMKills
	}
	assert.Positive(t, kills)
}

func TestColdStartAndResize(t *testing.T) {
	p := profile(t)
	app := testApp(300, Allocation{1, 1, 3072 * gym.MiB})
	c, err := New(p, []App{app}, WithStep(15e9), WithColdStart(10e9))
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.Advance(ctx))
	c.Set(0, Allocation{4, 1, 3072 * gym.MiB})
	require.NoError(t, c.Advance(ctx))
	scaling := c.Metrics(0)
	require.NoError(t, c.Advance(ctx))
	steady := c.Metrics(0)
	assert.Less(t, scaling.CPUUsage, steady.CPUUsage, "new pods serve only after the cold start")
	assert.Equal(t, 4, steady.ReadyReplicas)

	// Restart resizes keep the old limit through the cold start.
	in, err := New(p, []App{app}, WithStep(15e9))
	require.NoError(t, err)
	re, err := New(p, []App{app}, WithStep(15e9), WithRestartResize())
	require.NoError(t, err)
	for _, c := range []*Cluster{in, re} {
		c.Set(0, Allocation{1, 2, 3072 * gym.MiB})
		require.NoError(t, c.Advance(ctx))
	}
	assert.Greater(t, in.Metrics(0).ProcessedRate, re.Metrics(0).ProcessedRate)
}

func TestDeterminismAndNoise(t *testing.T) {
	app := testApp(50, Allocation{1, 1, 512 * gym.MiB})
	app.Noise = 0.05
	obs := func(seed uint64) []float64 {
		c, err := New(profile(t), []App{app, app})
		require.NoError(t, err)
		o := make([]float64, 2*gym.StateDim)
		require.NoError(t, c.Reset(context.Background(), seed, o))
		return o
	}
	assert.Equal(t, obs(1), obs(1))
	assert.NotEqual(t, obs(1), obs(2))
	o := obs(3)
	assert.NotEqual(t, o[:gym.StateDim], o[gym.StateDim:], "apps get their own noise")
}

func TestVecEnvEpisodes(t *testing.T) {
	app := testApp(50, Allocation{1, 1, 512 * gym.MiB})
	c, err := New(profile(t), []App{app, app, app}, WithEpisode(3))
	require.NoError(t, err)
	ctx := context.Background()
	n := c.Len()
	obs, rew, done := make([]float64, n*gym.StateDim), make([]float64, n), make([]bool, n)
	act := make([]float64, n*gym.ActDim)
	for i := range n {
		copy(act[i*gym.ActDim:], []float64{2, 1, 512 * gym.MiB})
	}
	require.NoError(t, c.Reset(ctx, 7, obs))
	require.NoError(t, c.ObservationSpace().Contains(obs[:gym.StateDim]))
	var ends []bool
	for range 7 {
		require.NoError(t, c.Step(ctx, act, obs, rew, done))
		ends = append(ends, done[0])
		for i := range n {
			require.NoError(t, c.ObservationSpace().Contains(obs[i*gym.StateDim:(i+1)*gym.StateDim]))
			assert.True(t, rew[i] >= 0 && rew[i] <= 2)
		}
	}
	assert.Equal(t, []bool{false, false, true, false, false, true, false}, ends)
	assert.Equal(t, 2, c.Allocation(0).Replicas)

	assert.ErrorContains(t, c.Step(ctx, act[:3], obs, rew, done), "actions")
	act[1] = math.NaN()
	assert.ErrorContains(t, c.Step(ctx, act, obs, rew, done), "NaN")
}

func TestAppEnv(t *testing.T) {
	e, err := NewEnv(profile(t), testApp(50, Allocation{1, 1, 512 * gym.MiB}), WithEpisode(2))
	require.NoError(t, err)
	ctx := context.Background()
	_, _, _, _, _, err = e.Step(ctx, []float64{1, 1, 1e9})
	assert.ErrorContains(t, err, "before Reset")
	obs, info, err := e.Reset(ctx, 1)
	require.NoError(t, err)
	assert.Len(t, obs, gym.StateDim)
	assert.Equal(t, 0, info.Step)
	_, r, term, trunc, info, err := e.Step(ctx, []float64{3, 0.5, 1e9})
	require.NoError(t, err)
	assert.False(t, term || trunc)
	assert.Positive(t, r)
	assert.Equal(t, 3, info.Metrics.Replicas)
	_, _, _, trunc, _, err = e.Step(ctx, []float64{3, 0.5, 1e9})
	require.NoError(t, err)
	assert.True(t, trunc)
	_, _, _, _, _, err = e.Step(ctx, []float64{3, 0.5})
	assert.ErrorContains(t, err, "replicas")
}

func TestScenarios(t *testing.T) {
	for _, s := range Scenarios() {
		got, err := ParseScenario(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	_, err := ParseScenario("earthquake")
	assert.ErrorContains(t, err, "file-sizes")

	chain := []segments.Spec{{Name: "floatOperations", Size: 10000}, {Name: "readFile", Size: 131072}, {Name: "json2yaml", Size: 500}, {Name: "matMul", Size: 50}, {Name: "dbRead", Size: 1024}, {Name: "imageRotate", Size: 40}}
	tests := []struct {
		s    Scenario
		want []int
	}{
		{FloatOps, []int{2560000, 131072, 500, 50, 1024, 40}},
		{FileSizes, []int{10000, 524288, 500, 50, 1024, 40}},
		{JSONSize, []int{10000, 131072, 3000, 50, 1024, 40}},
		{MatrixSize, []int{10000, 131072, 500, 150, 1024, 40}},
		{DBItems, []int{10000, 131072, 500, 50, 10240, 40}},
		{ImageSize, []int{10000, 131072, 500, 50, 1024, 160}},
		{LoadLow, []int{10000, 131072, 500, 50, 1024, 40}},
	}
	for _, tt := range tests {
		var sizes []int
		for _, s := range tt.s.Apply(chain) {
			sizes = append(sizes, s.Size)
		}
		assert.Equal(t, tt.want, sizes, tt.s.String())
	}
	assert.Equal(t, 10000, chain[0].Size, "Apply copies")

	app := testApp(50, Allocation{1, 1, 512 * gym.MiB})
	app.Chain = []segments.Spec{{Name: "floatOperations", Size: 10000}}
	c, err := New(profile(t), []App{app})
	require.NoError(t, err)
	before := c.Model(0).CPU
	require.NoError(t, c.Inject(0, FloatOps))
	assert.InEpsilon(t, 256, (c.Model(0).CPU-DefaultOverheads().CPU)/(before-DefaultOverheads().CPU), 0.1)
	require.NoError(t, c.Inject(0, LoadHigh))
	assert.Equal(t, 200.0, c.App(0).Load.At(0))
}

func TestValidation(t *testing.T) {
	p := profile(t)
	good := testApp(1, Allocation{1, 1, 1e9})
	bad := good
	bad.Speed, bad.Load.Shape, bad.Initial.Replicas = 0, nil, 0
	_, err := New(p, []App{bad})
	require.Error(t, err)
	for _, want := range []string{"apps[0]", "speed", "load.shape", "initial"} {
		assert.ErrorContains(t, err, want)
	}
	_, err = New(p, nil)
	assert.ErrorContains(t, err, "no applications")
	_, err = New(p, []App{good}, WithAlpha(2))
	assert.ErrorContains(t, err, "alpha")
	_, err = New(p, []App{good}, WithStep(0))
	assert.ErrorContains(t, err, "step")

	broken := good
	broken.Chain, broken.Model = nil, &Model{CPU: 0.01, P50: 0.02, P95: 0.01, P99: 0.03, BaseMemory: 1e8}
	_, err = New(p, []App{broken})
	assert.ErrorContains(t, err, "quantiles")
	broken.Model = nil
	_, err = New(p, []App{broken})
	assert.ErrorContains(t, err, "chain: empty")
}

// TestGivenModel: an application with a given model is simulated with it,
// exactly as with the one the chain derives, and has no chain to change.
func TestGivenModel(t *testing.T) {
	p := profile(t)
	app := testApp(40, Allocation{2, 0.5, 512 * gym.MiB})
	app.Noise = 0.05
	m, err := NewModel(p, app.Chain, app.Speed, DefaultOverheads())
	require.NoError(t, err)
	given := app
	given.Chain, given.Model = nil, &m
	_, want := run(t, app, 5)
	c, got := run(t, given, 5)
	assert.Equal(t, want, got)
	assert.ErrorContains(t, c.Inject(0, MatrixSize), "no chain")
	require.NoError(t, c.Inject(0, LoadHigh), "load scenarios need no chain")
}

func first(a, _ float64) float64  { return a }
func second(_, b float64) float64 { return b }

func TestServicesOfLimitedCapacity(t *testing.T) {
	// dbWrite 64 rows, with PostgreSQL's CPU per request as measured on the
	// 2-core AMD machine (0.25 ms); its services get one core shared with a
	// load generator at 0.15 ms per request: at most 2500 req/s.
	prof := profile(t)
	prof.Entries = append([]calibration.Entry(nil), prof.Entries...)
	found := false
	for i, e := range prof.Entries {
		if e.Segment == "dbWrite" && e.Size == 64 {
			prof.Entries[i].ServiceCPUSeconds, found = 0.25e-3, true
		}
	}
	require.True(t, found, "the profile has dbWrite 64")
	a := App{
		Name: "db", Chain: []segments.Spec{{Name: "dbWrite", Size: 64}}, Speed: 1,
		SLO:     gym.SLO{Kind: gym.LatencySLO, Target: 0.1},
		Load:    Load{Shape: flat(20), Scale: 1},
		Initial: Allocation{Replicas: 8, CPU: 4, Memory: 8192 * gym.MiB},
	}
	last := func(rate float64, opts ...Option) gym.Metrics {
		app := a
		app.Load.Scale = rate
		c, err := New(prof, []App{app}, opts...)
		require.NoError(t, err)
		require.Positive(t, c.Model(0).ServiceCPU)
		for range 10 {
			c.Set(0, app.Initial)
			require.NoError(t, c.Advance(context.Background()))
		}
		return c.Metrics(0)
	}
	limited := WithServices(1, 0.15e-3)
	wait := func(rho float64) float64 { return 0.25e-3 * rho / (1 - rho) }
	for _, tt := range []struct {
		rate float64
		rho  float64 // of the services' core
	}{{500, 0.2}, {2000, 0.8}} {
		free, busy := last(tt.rate), last(tt.rate, limited)
		assert.InDelta(t, tt.rate, busy.ProcessedRate, 1e-6, "below capacity every request is served")
		// The mean wait D·ρ/(1−ρ), exponential: p95 adds −ln(0.05) of it.
		assert.InDelta(t, wait(tt.rho)*-math.Log(0.05), busy.LatencyP95-free.LatencyP95, 1e-6, "rate %g", tt.rate)
		assert.InDelta(t, free.CPUUsage, busy.CPUUsage, 1e-9, "the pods' CPU does not change")
	}
	// Beyond 2500 req/s the services bound the throughput and the backlog
	// grows; unlimited services serve everything.
	over := last(3000, limited)
	assert.Zero(t, over.OOMKills)
	assert.InDelta(t, 2500*0.99, over.ProcessedRate, 1e-6, "at most the services' capacity at the highest utilisation modelled")
	assert.Greater(t, over.LatencyP95, 1.0, "the backlog's wait")
	assert.InDelta(t, 3000, last(3000).ProcessedRate, 1e-6)
	assert.Equal(t, last(2000), last(2000, WithServices(0, 0.15e-3)), "0 cores: unlimited, as before")

	// One pod of 9 slots: each holds its request through the wait at the
	// services, so the pair sustains the rate x at which 9 slots are just
	// busy, x·(P50 + wait(x)) = 9, short of the services' capacity (an open
	// queue's wait would grow without bound and starve the slots).
	a.Initial.Replicas, a.Concurrency = 1, 9
	c, err := New(prof, []App{a}, limited)
	require.NoError(t, err)
	p50 := c.Model(0).P50
	bounded := last(3000, limited)
	x := bounded.ProcessedRate
	assert.Less(t, x, 2400.0)
	assert.Greater(t, x, 1000.0)
	assert.InDelta(t, 9, x*(p50+wait(x/2500)), 1e-6)

	_, err = New(prof, []App{a}, WithServices(-1, 0))
	assert.ErrorContains(t, err, "service cores -1")
}

func TestRandomStart(t *testing.T) {
	app := testApp(1, Allocation{2, 1, 512 * gym.MiB})
	app.Load.Shape = make([]float64, 1000)
	for i := range app.Load.Shape {
		app.Load.Shape[i] = float64(i + 1) // the arrival rate names the trace step
	}
	app.Load.Offset = 10
	ctx := context.Background()
	// arrivals returns the arrival rates of the reset's step and the next.
	arrivals := func(e *AppEnv, seed uint64) (float64, float64) {
		_, info, err := e.Reset(ctx, seed)
		require.NoError(t, err)
		_, _, _, _, next, err := e.Step(ctx, []float64{2, 1, 512 * gym.MiB})
		require.NoError(t, err)
		return info.Metrics.ArrivalRate, next.Metrics.ArrivalRate
	}

	fixed, err := NewEnv(profile(t), app)
	require.NoError(t, err)
	random, err := NewEnv(profile(t), app, WithRandomStart())
	require.NoError(t, err)
	starts := map[float64]bool{}
	for seed := range uint64(20) {
		a, b := arrivals(fixed, seed)
		assert.InDelta(t, 11, a, 1e-9, "seed %d: without WithRandomStart every episode starts at the offset", seed)
		assert.InDelta(t, 12, b, 1e-9)

		a, b = arrivals(random, seed)
		assert.InDelta(t, a+1, b, 1e-9, "seed %d: the trace is followed in order from the drawn start", seed)
		again, _ := arrivals(random, seed)
		assert.Equal(t, a, again, "seed %d: the start is the seed's", seed)
		starts[a] = true
	}
	assert.Greater(t, len(starts), 15, "20 seeds draw (almost) 20 different starts")
}
