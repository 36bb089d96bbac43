package recommender_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender"
)

var bounds = recommender.Bounds{MinReplicas: 1, MaxReplicas: 20, MinCPU: 0.128, MaxCPU: 2.048, MinMemory: 256 << 20, MaxMemory: 3072 << 20}

func TestBoundsClamp(t *testing.T) {
	tests := []struct {
		name   string
		in     recommender.Allocation
		expect recommender.Allocation
	}{
		{"inside", recommender.Allocation{Replicas: 3, CPU: 0.5, Memory: 512 << 20}, recommender.Allocation{Replicas: 3, CPU: 0.5, Memory: 512 << 20}},
		{"below", recommender.Allocation{Replicas: 0, CPU: 0.01, Memory: 1}, recommender.Allocation{Replicas: 1, CPU: 0.128, Memory: 256 << 20}},
		{"above", recommender.Allocation{Replicas: 50, CPU: 9, Memory: 1 << 40}, recommender.Allocation{Replicas: 20, CPU: 2.048, Memory: 3072 << 20}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.expect, bounds.Clamp(tc.in))
		})
	}
}

func TestBoundsValidate(t *testing.T) {
	require.NoError(t, bounds.Validate())
	tests := []struct {
		name   string
		mutate func(*recommender.Bounds)
		errMsg string
	}{
		{"min replicas zero", func(b *recommender.Bounds) { b.MinReplicas = 0 }, "minReplicas 0 must be at least 1"},
		{"max below min", func(b *recommender.Bounds) { b.MaxReplicas = 0 }, "maxReplicas 0 is below minReplicas 1"},
		{"negative cpu", func(b *recommender.Bounds) { b.MinCPU = -1 }, "cpu minAllowed -1 cores is negative"},
		{"zero max memory", func(b *recommender.Bounds) { b.MinMemory, b.MaxMemory = 0, 0 }, "memory maxAllowed 0 bytes must be positive"},
		{"inverted cpu", func(b *recommender.Bounds) { b.MaxCPU = 0.1 }, "cpu maxAllowed 0.1 is below minAllowed 0.128 cores"},
		{"nan", func(b *recommender.Bounds) { b.MaxMemory = math.NaN() }, "memory bounds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := bounds
			tc.mutate(&b)
			err := b.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errMsg)
			assert.Contains(t, err.Error(), "recommender bounds")
		})
	}
}

func TestFake(t *testing.T) {
	cur := recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 1 << 30}
	obs := recommender.Observation{Current: cur}

	f := recommender.NewFake()
	assert.Equal(t, "fake", f.Name())
	assert.Equal(t, cur, f.Recommend(obs), "no script: keep current")

	a, b := recommender.Allocation{Replicas: 1}, recommender.Allocation{Replicas: 5}
	f = recommender.NewFake(a, b)
	f.ID = "scripted"
	assert.Equal(t, "scripted", f.Name())
	got := []recommender.Allocation{f.Recommend(obs), f.Recommend(obs), f.Recommend(obs)}
	assert.Equal(t, []recommender.Allocation{a, b, b}, got, "script played in order, last repeated")
	assert.Len(t, f.Observations, 3)

	var _ recommender.Recommender = f
}

func TestAllocationString(t *testing.T) {
	assert.Equal(t, "3×(500m, 256Mi)", recommender.Allocation{Replicas: 3, CPU: 0.5, Memory: 256 << 20}.String())
}

func TestValidateStep(t *testing.T) {
	require.NoError(t, recommender.ValidateStep(15e9))
	require.ErrorContains(t, recommender.ValidateStep(0), "step 0s must be positive")
}

func TestBoundsWithMinCPU(t *testing.T) {
	b := recommender.Bounds{MinReplicas: 1, MaxReplicas: 20, MinCPU: 0.128, MaxCPU: 2.048, MinMemory: 1, MaxMemory: 2}
	assert.Equal(t, 0.512, b.WithMinCPU(0.512).MinCPU)
	assert.Equal(t, 0.128, b.WithMinCPU(0).MinCPU, "a lower floor leaves the bounds")
	assert.Equal(t, 2.048, b.WithMinCPU(4).MinCPU, "at most MaxCPU")
	assert.Equal(t, 0.128, b.MinCPU, "b is not changed")
}
