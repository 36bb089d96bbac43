package vpa_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
)

const (
	mi   = 1 << 20
	day  = 24 * time.Hour
	cpuF = 0.01 // first CPU bucket, cores
	memF = 1e7  // first memory bucket, bytes
)

var bounds = recommender.Bounds{MinReplicas: 1, MaxReplicas: 10, MinCPU: 0.001, MaxCPU: 8, MinMemory: 1, MaxMemory: 1 << 36}

// Hand computations of the upstream estimator chain, written out from the
// formulas rather than calling the package.

// bucketEnd is the end of the exponential bucket (growth 5 %) holding v.
func bucketEnd(v, first float64) float64 {
	b := math.Floor(math.Log(v*0.05/first+1) / math.Log(1.05))
	return first * (math.Pow(1.05, b+1) - 1) / 0.05
}

// withMargin is model.ResourceAmount arithmetic: a + trunc(a*0.15).
func withMargin(a float64) float64 { return a + math.Trunc(a*0.15) }

// cpuEst and memEst are percentile -> amount (millicores, bytes) -> margin.
func cpuEst(usage float64) float64 { return withMargin(math.Trunc(bucketEnd(usage, cpuF) * 1000)) }
func memEst(peak float64) float64  { return withMargin(math.Trunc(bucketEnd(peak, memF))) }

// lowerOf and upperOf apply the confidence multipliers and the minimums
// (logic.CreatePodResourceRecommender).
func lowerOf(est, conf, minimum float64) float64 {
	return math.Max(math.Trunc(est*math.Pow(1+0.001/conf, -2)), minimum)
}

func upperOf(est, conf, minimum, capAt float64) float64 {
	return math.Min(math.Max(math.Trunc(math.Min(est*(1+1/conf), 1e14)), minimum), capAt)
}

func newVPA(t testing.TB, step time.Duration, opts ...vpa.Option) *vpa.VPA {
	t.Helper()
	v, err := vpa.New(bounds, step, opts...)
	require.NoError(t, err)
	return v
}

func observation(pods int, cpu, mem, perPodUsage, peak float64) recommender.Observation {
	return recommender.Observation{
		Current:       recommender.Allocation{Replicas: pods, CPU: cpu, Memory: mem},
		ReadyReplicas: pods,
		CPUUsage:      perPodUsage * float64(pods),
		MemoryUsage:   peak * float64(pods),
		MemoryPeak:    peak,
	}
}

// Mirrors percentileEstimator + marginEstimator + confidenceMultiplier +
// minResourcesEstimator for a steady pod: 0.5 cores of a 1-core request and
// a 300 MiB peak, sampled every minute.
func TestEstimateSteadyUsage(t *testing.T) {
	tests := []struct {
		name  string
		calls int
	}{
		{"first sample: no confidence", 1},
		{"one hour", 61},
		{"one day", 1441},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newVPA(t, time.Minute)
			_, ok := v.Recommendation()
			require.False(t, ok)
			var got recommender.Allocation
			for range tc.calls {
				got = v.Recommend(observation(1, 1, 1<<30, 0.5, 300*mi))
			}
			rec, ok := v.Recommendation()
			require.True(t, ok)
			// First CPU sample at 0, last at (calls-1) min; one sample a minute.
			conf := float64(tc.calls-1) / 1440
			cpu, mem := cpuEst(0.5), memEst(300*mi)
			assert.Equal(t, vpa.Amounts{CPU: cpu / 1000, Memory: mem}, rec.Target)
			assert.Equal(t, rec.Target, rec.UncappedTarget)
			assert.Equal(t, vpa.Amounts{CPU: lowerOf(cpu, conf, 25) / 1000, Memory: lowerOf(mem, conf, 250*mi)}, rec.LowerBound)
			assert.Equal(t, vpa.Amounts{CPU: upperOf(cpu, conf, 25, 8000) / 1000, Memory: upperOf(mem, conf, 250*mi, 1<<36)}, rec.UpperBound)
			assert.Equal(t, 1, got.Replicas, "replicas untouched")
		})
	}
	assert.InDelta(t, 0.588, cpuEst(0.5)/1000, 0.01, "sanity: 0.5 cores -> ~0.51 bucket end + 15 %")
}

// Mirrors minResourcesEstimator (25 millicores, 250 MiB per pod) and the
// policy caps (capping.go: minAllowed/maxAllowed), with UncappedTarget kept.
func TestMinResourcesAndCaps(t *testing.T) {
	tests := []struct {
		name     string
		b        recommender.Bounds
		opts     []vpa.Option
		usage    float64
		peak     float64
		target   vpa.Amounts
		uncapped vpa.Amounts
	}{
		{"upstream minimums", bounds, nil, 0.001, 1 * mi, vpa.Amounts{CPU: 0.025, Memory: 250 * mi}, vpa.Amounts{CPU: 0.025, Memory: 250 * mi}},
		{"custom minimums", bounds, []vpa.Option{vpa.WithMinResources(0.1, 512*mi)}, 0.001, 1 * mi, vpa.Amounts{CPU: 0.1, Memory: 512 * mi}, vpa.Amounts{CPU: 0.1, Memory: 512 * mi}},
		{"capped to minAllowed", recommender.Bounds{MinReplicas: 1, MaxReplicas: 1, MinCPU: 0.128, MaxCPU: 2, MinMemory: 300 * mi, MaxMemory: 1 << 32},
			nil, 0.001, 1 * mi, vpa.Amounts{CPU: 0.128, Memory: 300 * mi}, vpa.Amounts{CPU: 0.025, Memory: 250 * mi}},
		{"capped to maxAllowed", recommender.Bounds{MinReplicas: 1, MaxReplicas: 1, MinCPU: 0.1, MaxCPU: 2, MinMemory: 1, MaxMemory: 1 << 30},
			nil, 3, 2 << 30, vpa.Amounts{CPU: 2, Memory: 1 << 30}, vpa.Amounts{CPU: cpuEst(3) / 1000, Memory: memEst(2 << 30)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := vpa.New(tc.b, time.Minute, tc.opts...)
			require.NoError(t, err)
			for range 10 {
				v.Recommend(observation(2, 1, 1<<30, tc.usage, tc.peak))
			}
			rec, ok := v.Recommendation()
			require.True(t, ok)
			assert.Equal(t, tc.target, rec.Target)
			assert.Equal(t, tc.uncapped, rec.UncappedTarget)
			assert.LessOrEqual(t, rec.LowerBound.CPU, rec.Target.CPU)
			assert.GreaterOrEqual(t, rec.UpperBound.Memory, rec.Target.Memory)
			assert.GreaterOrEqual(t, rec.LowerBound.CPU, tc.b.MinCPU)
			assert.LessOrEqual(t, rec.UpperBound.CPU, tc.b.MaxCPU)
		})
	}
}

// Mirrors ContainerState.RecordOOM: memory needed = max(used+100 MiB,
// used*1.2) with used = max(request, the interval's usage peak), recorded as
// the killed pods' peak.
func TestOOMBumpUp(t *testing.T) {
	tests := []struct {
		name      string
		pods      int
		killed    int
		request   float64
		peak      float64
		needed    float64
		lowerPeak float64 // memory the lower bound (p50) reflects
	}{
		{"+100 MiB wins for small requests", 1, 1, 200 * mi, 150 * mi, 300 * mi, 300 * mi},
		{"x1.2 wins for large requests", 1, 1, 1 << 30, 900 * mi, math.Trunc(1.2 * (1 << 30)), math.Trunc(1.2 * (1 << 30))},
		{"peak above request is used", 1, 1, 200 * mi, 450 * mi, 550 * mi, 550 * mi},
		// 3 pods at the 400 MiB peak, 1 killed at 600 MiB: p50 stays at the peak, p90 takes the OOM.
		{"one of four pods killed", 4, 1, 500 * mi, 400 * mi, 600 * mi, 400 * mi},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newVPA(t, time.Minute)
			v.Recommend(observation(tc.pods, 1, tc.request, 0.5, tc.peak))
			o := observation(tc.pods, 1, tc.request, 0.5, tc.peak)
			o.OOMKills = tc.killed
			v.Recommend(o)
			rec, _ := v.Recommendation()
			assert.Equal(t, memEst(tc.needed), rec.Target.Memory)
			assert.Equal(t, lowerOf(memEst(tc.lowerPeak), 1.0/1440, 250*mi), rec.LowerBound.Memory)
		})
	}
}

// Mirrors the updater's rule (UpdatePriorityCalculator.AddPod): update when
// the request is outside [lower, upper], or the pods are 12 h old and the
// change reaches 10 %.
func TestUpdateRule(t *testing.T) {
	const step = 10 * time.Minute
	cpuT, memT := cpuEst(0.5)/1000, memEst(300*mi)
	// Confidence after k calls of 10 min with 1 pod: (k-1)*10 min of history.
	upperCPUAt := func(k int) float64 { return upperOf(cpuEst(0.5), float64(k-1)/144, 25, 8000) / 1000 }
	firstAbove := 0
	for k := 2; upperCPUAt(k) >= 4; k++ {
		firstAbove = k
	}
	tests := []struct {
		name       string
		cpu, mem   float64
		opts       []vpa.Option
		firstCall  int // index of the first call that changes resources; -1 never
		wantCPU    float64
		wantMemory float64
	}{
		{"young pods inside the bounds keep; at 12 h the 16 % diff updates", 0.7, memT, nil, 71, cpuT, memT},
		{"under 10 % never updates", math.Round(cpuT*1.05*1000) / 1000, memT, nil, -1, 0, 0},
		// At call 1 the lower bound is 588m*(1+0.001*144)^-2 = 449m > 100m.
		{"below the lower bound", 0.1, memT, nil, 1, cpuT, memT},
		{"above the upper bound once confident", 4, memT, nil, firstAbove, cpuT, memT},
		// 100 MiB is below the 250 MiB minimum, so below the lower bound at once.
		{"memory only leaves cpu", 0.1, 100 * mi, []vpa.Option{vpa.WithControlledResources(vpa.Memory)}, 0, 0.1, memT},
		{"cpu only leaves memory", 0.1, 100 * mi, []vpa.Option{vpa.WithControlledResources(vpa.CPU)}, 1, cpuT, 100 * mi},
		{"shorter lifetime threshold", 0.7, memT, []vpa.Option{vpa.WithPodLifetimeThreshold(time.Hour)}, 5, cpuT, memT},
		{"higher update threshold", 0.7, memT, []vpa.Option{vpa.WithUpdateThreshold(0.5)}, -1, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newVPA(t, step, tc.opts...)
			first := -1
			var got recommender.Allocation
			for i := range 100 {
				got = v.Recommend(observation(1, tc.cpu, tc.mem, 0.5, 300*mi))
				if got.CPU != tc.cpu || got.Memory != tc.mem {
					first = i
					break
				}
			}
			require.Equal(t, tc.firstCall, first)
			if first >= 0 {
				assert.Equal(t, tc.wantCPU, got.CPU)
				assert.Equal(t, tc.wantMemory, got.Memory)
				assert.Equal(t, 1, got.Replicas)
			}
		})
	}
	assert.Equal(t, 25, firstAbove, "588m*(1+144/24) = 4116m still >= 4 cores; at k=26 3975m")
}

// Applying the recommendation restarts the pods: the 12 h clock restarts.
func TestUpdateRestartsPodClock(t *testing.T) {
	v := newVPA(t, time.Hour, vpa.WithPodLifetimeThreshold(3*time.Hour))
	cur := recommender.Allocation{Replicas: 1, CPU: 0.7, Memory: memEst(300 * mi)}
	var changes []int
	for i := range 12 {
		usage := 0.5
		if i >= 4 {
			usage = 0.4 // the target drifts down by ~20 %
		}
		o := observation(1, cur.CPU, cur.Memory, usage, 300*mi)
		next := v.Recommend(o)
		if next != cur {
			changes = append(changes, i)
		}
		cur = next
	}
	// 3 h after the start (call index 2: now = 3 h) the 16 % diff applies; the
	// next update needs 3 h more of pod life and a 10 % diff.
	require.NotEmpty(t, changes)
	assert.Equal(t, 2, changes[0])
	for i := 1; i < len(changes); i++ {
		assert.GreaterOrEqual(t, changes[i]-changes[i-1], 3, "updates %v at least 3 h apart", changes)
	}
}

// Mirrors the quick-OOM rule: an OOM kill within 10 min of the container's
// start evicts even inside the bounds, if the resources change.
func TestQuickOOM(t *testing.T) {
	tests := []struct {
		name    string
		oomAt   int // call index (1-minute steps) of the OOM kill
		updated bool
	}{
		{"within 10 minutes", 3, true},
		{"after 10 minutes", 12, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newVPA(t, time.Minute)
			cur := recommender.Allocation{Replicas: 4, CPU: cpuEst(0.5) / 1000, Memory: 500 * mi}
			changed := false
			for i := 0; i <= tc.oomAt; i++ {
				o := observation(4, cur.CPU, cur.Memory, 0.5, 400*mi)
				if i == tc.oomAt {
					o.OOMKills = 1
				}
				changed = v.Recommend(o) != cur
				require.False(t, changed && i < tc.oomAt, "no change before the OOM")
			}
			assert.Equal(t, tc.updated, changed)
			rec, _ := v.Recommendation()
			assert.Less(t, rec.LowerBound.Memory, 500.0*mi, "the request stays inside the bounds")
			assert.Equal(t, memEst(600*mi), rec.Target.Memory)
		})
	}
}

func TestNoSamplesNoChange(t *testing.T) {
	v := newVPA(t, time.Minute)
	cur := recommender.Allocation{Replicas: 2, CPU: 0.001, Memory: 1}
	o := recommender.Observation{Current: cur} // no ready pods
	assert.Equal(t, cur, v.Recommend(o))
	_, ok := v.Recommendation()
	assert.False(t, ok)
	assert.Equal(t, "vpa", v.Name())
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		b      recommender.Bounds
		step   time.Duration
		opts   []vpa.Option
		errMsg string
	}{
		{"bad bounds", recommender.Bounds{}, time.Minute, nil, "minReplicas 0"},
		{"bad step", bounds, -1, nil, "step -1ns"},
		{"percentiles out of order", bounds, time.Minute, []vpa.Option{vpa.WithPercentiles(0.9, 0.5, 0.95)}, "percentiles lower 0.9"},
		{"negative margin", bounds, time.Minute, []vpa.Option{vpa.WithSafetyMargin(-1)}, "safety margin -1"},
		{"half-life", bounds, time.Minute, []vpa.Option{vpa.WithHalfLife(0)}, "half-life"},
		{"interval", bounds, time.Minute, []vpa.Option{vpa.WithMemoryAggregationInterval(0)}, "memory aggregation interval"},
		{"oom", bounds, time.Minute, []vpa.Option{vpa.WithOOMBumpUp(0.5, 0)}, "OOM bump-up ratio 0.5"},
		{"controlled", bounds, time.Minute, []vpa.Option{vpa.WithControlledResources(0)}, "controlled resources"},
		{"first bucket", bounds, time.Minute, []vpa.Option{vpa.WithCPUFirstBucket(0)}, "CPU first bucket"},
		{"min resources", bounds, time.Minute, []vpa.Option{vpa.WithMinResources(-1, 0)}, "minimum resources"},
		{"thresholds", bounds, time.Minute, []vpa.Option{vpa.WithEvictAfterOOM(-1)}, "evict-after-OOM"},
		{"recommender interval", bounds, time.Minute, []vpa.Option{vpa.WithRecommenderInterval(-time.Second)}, "recommender interval -1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vpa.New(tc.b, tc.step, tc.opts...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errMsg)
			assert.Contains(t, err.Error(), "vpa:")
		})
	}
}

// The recommendation is estimated at the first sample and then once per
// recommender interval, from every sample taken since (the same as a VPA
// estimating at every step, read at those steps); in between the updater
// acts on the last one.
func TestRecommenderInterval(t *testing.T) {
	const step = 15 * time.Second
	tests := []struct {
		name     string
		opts     []vpa.Option
		estimate func(n int) bool // whether call n (from 1) estimates
	}{
		{"default 1 min", nil, func(n int) bool { return n%4 == 1 }},
		{"30 s", []vpa.Option{vpa.WithRecommenderInterval(30 * time.Second)}, func(n int) bool { return n%2 == 1 }},
		{"not a multiple of the step", []vpa.Option{vpa.WithRecommenderInterval(40 * time.Second)}, func(n int) bool { return n%3 == 1 }},
		{"every step", []vpa.Option{vpa.WithRecommenderInterval(0)}, func(int) bool { return true }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newVPA(t, step, tc.opts...)
			every := newVPA(t, step, vpa.WithRecommenderInterval(0))
			cur := recommender.Allocation{Replicas: 2, CPU: 1, Memory: 1 << 30}
			var held vpa.Recommendation
			changed := 0
			for n := 1; n <= 40; n++ {
				// Usage and peaks grow, so every estimate differs from the last.
				o := observation(2, cur.CPU, cur.Memory, 0.05*float64(n), float64(100+10*n)*mi)
				v.Observe(o)
				every.Observe(o)
				got, ok := v.Recommendation()
				require.True(t, ok)
				want, _ := every.Recommendation()
				if tc.estimate(n) {
					require.Equal(t, want, got, "call %d estimates", n)
					if n > 1 && got != held {
						changed++
					}
					held = got
				} else {
					require.Equal(t, held, got, "call %d keeps the last estimate", n)
					require.NotEqual(t, want, got, "call %d: the samples moved the estimate", n)
				}
			}
			assert.Positive(t, changed)
		})
	}
}

func TestRecommendDoesNotAllocate(t *testing.T) {
	v := newVPA(t, 30*time.Second)
	cur := recommender.Allocation{Replicas: 3, CPU: 0.5, Memory: 512 * mi}
	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		i++
		o := observation(3, cur.CPU, cur.Memory, 0.1+float64(i%37)/50, float64(200+i%53)*mi)
		o.OOMKills = i % 500 / 499
		cur = v.Recommend(o)
	})
	assert.Zero(t, allocs)
}

func BenchmarkRecommend(b *testing.B) {
	for _, bc := range []struct {
		name  string
		usage func(i int) (cpu, peak float64)
	}{
		{"steady", func(int) (float64, float64) { return 0.4, 300 * mi }},
		{"varying", func(i int) (float64, float64) { return 0.1 + float64(i%37)/40, float64(200+i%53) * mi }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			v := newVPA(b, 30*time.Second)
			cur := recommender.Allocation{Replicas: 3, CPU: 0.5, Memory: 512 * mi}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				u, p := bc.usage(i)
				cur = v.Recommend(observation(3, cur.CPU, cur.Memory, u, p))
			}
		})
	}
}
