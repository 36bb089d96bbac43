package vpa_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
)

// TestStateKeepsTheHistory: after a week of samples a restored VPA has the
// original's recommendation and confidence (the same bounds at once, where a
// new VPA has none), and a VPA with another histogram layout is refused.
func TestStateKeepsTheHistory(t *testing.T) {
	orig := newVPA(t, time.Minute)
	for range int(7 * day / time.Minute) {
		orig.Observe(observation(2, 1, 1<<30, 0.5, 300*mi))
	}
	want, ok := orig.Recommendation()
	require.True(t, ok)

	restored := newVPA(t, time.Minute)
	_, ok = restored.Recommendation()
	require.False(t, ok)
	require.NoError(t, restored.Restore(orig.State()))
	got, ok := restored.Recommendation()
	require.True(t, ok)
	assert.Equal(t, want, got)
	for range 60 {
		o := observation(2, 1, 1<<30, 0.7, 320*mi)
		orig.Observe(o)
		restored.Observe(o)
	}
	want, _ = orig.Recommendation()
	got, _ = restored.Recommendation()
	assert.Equal(t, want, got)

	other := newVPA(t, time.Minute, vpa.WithCPUFirstBucket(0.05))
	assert.ErrorContains(t, other.Restore(orig.State()), "vpa: restore: cpu histogram of")
	assert.ErrorContains(t, newVPA(t, time.Minute, vpa.WithHalfLife(time.Hour)).Restore(orig.State()), "with half-life 24h0m0s, this VPA's has")
}

func TestRestoreRefuses(t *testing.T) {
	v := newVPA(t, time.Minute)
	for range 100 {
		v.Observe(observation(2, 1, 1<<30, 0.5, 300*mi))
	}
	good := v.State()
	for _, tt := range []struct {
		name    string
		corrupt func(*vpa.State)
		err     string
	}{
		{"calls", func(s *vpa.State) { s.Calls = -3 }, "calls -3 outside [0, "},
		{"calls overflow", func(s *vpa.State) { s.Calls = math.MaxInt64 / 2 }, "(calls × step is a time)"},
		{"NaN weight", func(s *vpa.State) { s.Memory.Weights[2] = math.NaN() }, "memory histogram: weight of bucket 2 is NaN"},
		{"total", func(s *vpa.State) { s.CPU.Total = math.Inf(1) }, "cpu histogram: total weight +Inf"},
		{"reference", func(s *vpa.State) { s.CPU.Reference = time.Hour }, "cpu histogram: reference 1h0m0s is not a multiple of the half-life"},
		{"buckets", func(s *vpa.State) { s.CPU.Max = 10000 }, "cpu histogram: first and last buckets"},
		{"sample times", func(s *vpa.State) { s.FirstSample = 10 * time.Hour }, "firstSample 10h0m0s outside [0, 1h40m0s]"},
		{"window", func(s *vpa.State) { s.Window.Pods = -1 }, "window"},
		{"recommendation", func(s *vpa.State) { s.Recommendation.Target[1] = -1 }, "recommendation.target [587 -1] outside"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			s.CPU.Weights = append([]float64(nil), good.CPU.Weights...)
			s.Memory.Weights = append([]float64(nil), good.Memory.Weights...)
			r := *good.Recommendation
			s.Recommendation = &r
			tt.corrupt(&s)
			assert.ErrorContains(t, v.Restore(s), tt.err)
			assert.Equal(t, good, v.State(), "a refused state changes nothing")
		})
	}
}
