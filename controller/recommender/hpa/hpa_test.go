package hpa_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
)

var bounds = recommender.Bounds{MinReplicas: 1, MaxReplicas: 10, MinCPU: 0.1, MaxCPU: 4, MinMemory: 1 << 20, MaxMemory: 1 << 34}

const step = 15 * time.Second

// obs is one step of replicas pods (ready of them ready) with a 1-core request
// each using perPod cores.
func obs(replicas, ready int, perPod float64) recommender.Observation {
	return recommender.Observation{
		Current:       recommender.Allocation{Replicas: replicas, CPU: 1, Memory: 1 << 30},
		ReadyReplicas: ready,
		CPUUsage:      perPod * float64(ready),
	}
}

func newHPA(t testing.TB, step time.Duration, opts ...hpa.Option) *hpa.HPA {
	t.Helper()
	h, err := hpa.New(bounds, step, opts...)
	require.NoError(t, err)
	return h
}

// run feeds back the recommended replicas, all pods ready, with the total
// CPU demand of each step spread over the pods (1-core requests).
func run(h *hpa.HPA, replicas int, demand []float64) []int {
	out := make([]int, len(demand))
	for i, d := range demand {
		replicas = h.Recommend(obs(replicas, replicas, d/float64(replicas))).Replicas
		out[i] = replicas
	}
	return out
}

func repeat(v float64, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// Mirrors ReplicaCalculator.GetResourceReplicas without unready pods
// (TestReplicaCalcScaleUp, ...ScaleDown, ...ToleranceCM upstream).
func TestMetricTolerance(t *testing.T) {
	tests := []struct {
		name     string
		replicas int
		perPod   float64
		target   float64
		want     int
		util     float64
	}{
		{"at target", 4, 0.5, 0.5, 4, 0.5},
		{"inside band above", 4, 0.54, 0.5, 4, 0.54},
		{"inside band below", 4, 0.46, 0.5, 4, 0.46},
		{"edge 55 % is 1.1 which floats past the band", 4, 0.55, 0.5, 5, 0.55}, // |1-55/50| = 0.10000000000000009 > 0.1
		{"edge 45 % stays (0.09999999999999998)", 4, 0.45, 0.5, 4, 0.45},
		{"scale up ceil(4*56/50)", 4, 0.56, 0.5, 5, 0.56},
		{"scale up ceil(3*90/70)", 3, 0.9, 0.7, 4, 0.9},
		{"scale down ceil(8*20/70)", 8, 0.2, 0.7, 3, 0.2},
		{"integer percent truncates 0.5549 to 55 %", 4, 0.5549, 0.5, 5, 0.55},
		{"usage above request", 2, 1.5, 0.5, 6, 1.5},
		{"idle goes to min", 5, 0, 0.5, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHPA(t, step, hpa.WithTarget(tc.target), hpa.WithDownscaleStabilization(0))
			got := h.Recommend(obs(tc.replicas, tc.replicas, tc.perPod))
			assert.Equal(t, tc.want, got.Replicas)
			assert.Equal(t, 1.0, got.CPU, "cpu kept")
			assert.Equal(t, float64(1<<30), got.Memory, "memory kept")
			st := h.Status()
			assert.True(t, st.Valid)
			assert.InDelta(t, tc.util, st.Utilization, 1e-12)
			assert.InDelta(t, tc.util/tc.target, st.UsageRatio, 1e-9)
			assert.Equal(t, tc.want, st.Replicas)
		})
	}
}

// Mirrors the unready-pod handling of GetResourceReplicas
// (TestReplicaCalcScaleUpUnreadyLessScale, ...UnreadyNoScale, ...ScaleDownIgnoresUnreadyPods).
func TestReadiness(t *testing.T) {
	tests := []struct {
		name            string
		replicas, ready int
		perReady        float64
		want            int
		valid           bool
	}{
		// ratio 2 on ready pods; with 2 unready at 0 %: 2*1000*100/(4*1000)=50 % -> ratio 1: no change.
		{"unready pods absorb the scale-up", 4, 2, 1.0, 4, true},
		// ratio 3; rebalanced 75 % -> 1.5 -> ceil(1.5*4) = 6.
		{"scale-up counts unready pods as 0 %", 4, 2, 1.5, 6, true},
		// ratio 2.4 with 1 unready: 1200*3*100/(4*1000) = 90 % -> 1.8 -> ceil(7.2) = 8.
		{"one unready pod", 4, 3, 1.2, 8, true},
		// ratio 0.2 < 1: unready pods are ignored, ceil(0.2*2) = 1.
		{"scale-down ignores unready pods", 4, 2, 0.1, 1, true},
		// rebalanced ratio 0.8 < 1 would flip the direction: keep.
		{"direction flip keeps current", 5, 2, 0.6, 5, true},
		{"no ready pods: no metrics", 4, 0, 0, 4, false},
		// more ready pods than spec (scale-down in progress): average over all, count spec pods.
		{"terminating pods", 2, 4, 1.0, 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHPA(t, step, hpa.WithTarget(0.5), hpa.WithDownscaleStabilization(0))
			got := h.Recommend(obs(tc.replicas, tc.ready, tc.perReady))
			assert.Equal(t, tc.want, got.Replicas)
			assert.Equal(t, tc.valid, h.Status().Valid)
		})
	}
}

// Mirrors stabilizeRecommendationWithBehaviors: scale-down waits until every
// recommendation of the last 300 s, including the initial replica count, is
// at most the new one.
func TestDownscaleStabilization(t *testing.T) {
	tests := []struct {
		name   string
		step   time.Duration
		window time.Duration
		// the first call index that scales down
		firstDown int
	}{
		{"default 300 s at 15 s", 15 * time.Second, 0, 20}, // 20*15 s = 300 s is no longer within
		{"default 300 s at 30 s", 30 * time.Second, 0, 10},
		{"300 s at 7 s", 7 * time.Second, 0, 43}, // 43*7 = 301 >= 300, 42*7 = 294 < 300
		{"60 s at 15 s", 15 * time.Second, 60 * time.Second, 4},
		{"no window", 15 * time.Second, -1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []hpa.Option
			switch {
			case tc.window > 0:
				opts = append(opts, hpa.WithDownscaleStabilization(tc.window))
			case tc.window < 0:
				opts = append(opts, hpa.WithDownscaleStabilization(0))
			}
			h := newHPA(t, tc.step, append(opts, hpa.WithTarget(0.5))...)
			got := run(h, 10, repeat(1.0, 60)) // desired ceil(10*10/50)=2
			for i, r := range got {
				if i < tc.firstDown {
					require.Equal(t, 10, r, "call %d", i)
				} else {
					require.Equal(t, 2, r, "call %d", i)
				}
			}
		})
	}
}

// The stabilised recommendation is the maximum of the window, and a short
// spike holds replicas up for the whole window.
func TestStabilizationTakesMaxOfWindow(t *testing.T) {
	h := newHPA(t, step, hpa.WithTarget(0.5), hpa.WithDownscaleStabilization(60*time.Second))
	// From 4 replicas: demand 2 cores -> desired 4; 4 cores -> 8; 1 core -> 2.
	demand := []float64{2, 4, 1, 1, 1, 1, 1, 1}
	got := run(h, 4, demand)
	// call1 scales up to 8 (limit max(4+4, 8)); desired 2 afterwards, but 8
	// (recorded at call1) stays within 60 s until call5 (4*15 s = 60 s).
	assert.Equal(t, []int{4, 8, 8, 8, 8, 2, 2, 2}, got)
}

// Mirrors calculateScaleUpLimitWithScalingRules with the default policies
// (4 pods or 100 % per 15 s, selectPolicy Max) and others.
func TestScaleUpLimits(t *testing.T) {
	big := repeat(100, 8) // desired way over max
	maxOnly := hpa.DefaultBehavior()
	tests := []struct {
		name     string
		step     time.Duration
		behavior *hpa.Behavior
		from     int
		want     []int
	}{
		{"default at 15 s: max(+4, x2) per call", 15 * time.Second, nil, 1, []int{5, 10, 10, 10, 10, 10, 10, 10}},
		{"default from 3: 7 then 10", 15 * time.Second, nil, 3, []int{7, 10, 10, 10, 10, 10, 10, 10}},
		{"default at 5 s waits out the 15 s period", 5 * time.Second, nil, 1, []int{5, 5, 5, 10, 10, 10, 10, 10}},
		{"selectPolicy Min: min(+4, x2)", 15 * time.Second, &hpa.Behavior{
			ScaleUp:   hpa.Rules{Select: hpa.SelectMin, Policies: maxOnly.ScaleUp.Policies},
			ScaleDown: maxOnly.ScaleDown,
		}, 1, []int{2, 4, 8, 10, 10, 10, 10, 10}},
		{"1 pod per 30 s at 15 s", 15 * time.Second, &hpa.Behavior{
			ScaleUp:   hpa.Rules{Select: hpa.SelectMax, Policies: []hpa.Policy{{Type: hpa.Pods, Value: 1, Period: 30 * time.Second}}},
			ScaleDown: maxOnly.ScaleDown,
		}, 1, []int{2, 2, 3, 3, 4, 4, 5, 5}},
		{"scale-up disabled", 15 * time.Second, &hpa.Behavior{
			ScaleUp:   hpa.Rules{Select: hpa.SelectDisabled},
			ScaleDown: maxOnly.ScaleDown,
		}, 3, []int{3, 3, 3, 3, 3, 3, 3, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := []hpa.Option{hpa.WithTarget(0.5)}
			if tc.behavior != nil {
				opts = append(opts, hpa.WithBehavior(*tc.behavior))
			}
			h := newHPA(t, tc.step, opts...)
			assert.Equal(t, tc.want, run(h, tc.from, big))
		})
	}
}

// Mirrors calculateScaleDownLimitWithBehaviors.
func TestScaleDownLimits(t *testing.T) {
	def := hpa.DefaultBehavior()
	tests := []struct {
		name string
		down hpa.Rules
		want []int
	}{
		{"default 100 % per 15 s", hpa.Rules{Select: hpa.SelectMax, Policies: def.ScaleDown.Policies}, []int{1, 1, 1, 1, 1, 1}},
		{"2 pods per 30 s", hpa.Rules{Select: hpa.SelectMax, Policies: []hpa.Policy{{Type: hpa.Pods, Value: 2, Period: 30 * time.Second}}}, []int{8, 8, 6, 6, 4, 4}},
		{"50 % per 15 s", hpa.Rules{Select: hpa.SelectMax, Policies: []hpa.Policy{{Type: hpa.Percent, Value: 50, Period: 15 * time.Second}}}, []int{5, 2, 1, 1, 1, 1}},
		// Min of two: int(10*0.5)=5 vs 10-1=9: Max picks the bigger change (5), Min the smaller (9).
		{"selectPolicy Min", hpa.Rules{Select: hpa.SelectMin, Policies: []hpa.Policy{
			{Type: hpa.Percent, Value: 50, Period: 15 * time.Second}, {Type: hpa.Pods, Value: 1, Period: 15 * time.Second},
		}}, []int{9, 8, 7, 6, 5, 4}},
		{"disabled", hpa.Rules{Select: hpa.SelectDisabled}, []int{10, 10, 10, 10, 10, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := hpa.Behavior{ScaleUp: def.ScaleUp, ScaleDown: tc.down}
			h := newHPA(t, step, hpa.WithTarget(0.5), hpa.WithBehavior(b))
			assert.Equal(t, tc.want, run(h, 10, repeat(0.1, 6)))
		})
	}
}

// A scale-up stabilisation window takes the minimum of its recommendations.
func TestScaleUpStabilization(t *testing.T) {
	b := hpa.DefaultBehavior()
	b.ScaleUp.StabilizationWindow = 30 * time.Second
	h := newHPA(t, step, hpa.WithTarget(0.5), hpa.WithBehavior(b))
	// Demand 4 cores from 2 replicas: desired 8. The initial 2 is within 30 s
	// for calls 0 and 1; call 2 takes min(8, 8) limited to 2+4; at call 3
	// (demand 8 on 6 pods: desired 16) the window still holds call 2's 8.
	assert.Equal(t, []int{2, 2, 6, 8, 10}, run(h, 2, []float64{4, 4, 4, 8, 8}))
}

// reconcileAutoscaler enforces min/max before any metric and disables
// scaling at zero replicas.
func TestMinMax(t *testing.T) {
	b := bounds
	b.MinReplicas = 2
	tests := []struct {
		name     string
		replicas int
		perPod   float64
		want     int
		valid    bool
	}{
		{"above max", 12, 0.5, 10, false},
		{"below min", 1, 0.5, 2, false},
		{"zero replicas: scaling disabled", 0, 0, 0, false},
		{"metric capped by max", 8, 2.0, 10, true},
		{"metric floored by min", 4, 0.01, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := hpa.New(b, step, hpa.WithTarget(0.5), hpa.WithDownscaleStabilization(0))
			require.NoError(t, err)
			assert.Equal(t, tc.want, h.Recommend(obs(tc.replicas, tc.replicas, tc.perPod)).Replicas)
			assert.Equal(t, tc.valid, h.Status().Valid)
		})
	}
}

func TestResetStabilization(t *testing.T) {
	h := newHPA(t, step, hpa.WithTarget(0.5))
	assert.Equal(t, []int{10, 10}, run(h, 10, []float64{1, 1}))
	h.ResetStabilization()
	// The history is gone but the reset records the current 10 again.
	assert.Equal(t, 10, run(h, 10, []float64{1})[0])
	h.ResetStabilization()
	h2 := newHPA(t, step, hpa.WithTarget(0.5), hpa.WithDownscaleStabilization(0))
	h2.ResetStabilization()
	assert.Equal(t, 2, run(h2, 10, []float64{1})[0])
}

func TestNewErrors(t *testing.T) {
	bad := hpa.DefaultBehavior()
	bad.ScaleUp.Policies = []hpa.Policy{{Type: hpa.Pods, Value: 0, Period: time.Second}}
	tests := []struct {
		name   string
		b      recommender.Bounds
		step   time.Duration
		opts   []hpa.Option
		errMsg string
	}{
		{"bad bounds", recommender.Bounds{}, step, nil, "minReplicas 0"},
		{"bad step", bounds, 0, nil, "step 0s"},
		{"bad target", bounds, step, []hpa.Option{hpa.WithTarget(0)}, "target utilisation 0"},
		{"bad tolerance", bounds, step, []hpa.Option{hpa.WithTolerance(-0.1)}, "tolerance -0.1"},
		{"bad window", bounds, step, []hpa.Option{hpa.WithDownscaleStabilization(-time.Second)}, "scaleDown.stabilizationWindow"},
		{"bad policy", bounds, step, []hpa.Option{hpa.WithBehavior(bad)}, "scaleUp.policies[0]"},
		{"no policies", bounds, step, []hpa.Option{hpa.WithBehavior(hpa.Behavior{})}, "scaleUp has no policies"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hpa.New(tc.b, tc.step, tc.opts...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errMsg)
			assert.Contains(t, err.Error(), "hpa:")
		})
	}
}

func TestName(t *testing.T) {
	assert.Equal(t, "hpa", newHPA(t, step).Name())
	assert.Equal(t, hpa.DefaultTolerance, newHPA(t, step).Tolerance())
}

func TestRecommendDoesNotAllocate(t *testing.T) {
	h := newHPA(t, step, hpa.WithTarget(0.7))
	replicas, i := 3, 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		replicas = h.Recommend(obs(replicas, replicas, 0.2+float64(i%50)/40)).Replicas
	})
	assert.Zero(t, allocs)
}

func BenchmarkRecommend(b *testing.B) {
	for _, bc := range []struct {
		name string
		step time.Duration
		load func(i int) float64 // total demand, cores
	}{
		{"steady/15s", 15 * time.Second, func(int) float64 { return 3 }},
		{"varying/15s", 15 * time.Second, func(i int) float64 { return 1 + float64(i%97)/10 }},
		{"varying/1s", time.Second, func(i int) float64 { return 1 + float64(i%97)/10 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHPA(b, bc.step, hpa.WithTarget(0.7))
			replicas := 3
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				replicas = h.Recommend(obs(replicas, replicas, bc.load(i)/float64(replicas))).Replicas
			}
		})
	}
}
