package gym

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpace(t *testing.T) {
	s := ActionSpace(DefaultBounds())
	require.NoError(t, s.Validate())
	assert.Equal(t, DefaultBounds(), BoundsOf(s), "BoundsOf inverts ActionSpace")
	assert.Equal(t, ActDim, s.Dim())
	assert.NoError(t, s.Contains([]float64{3, 0.5, 512 * MiB}))
	err := s.Contains([]float64{30, math.NaN(), 512 * MiB})
	require.Error(t, err)
	assert.ErrorContains(t, err, "replicas = 30 outside [1, 20]")
	assert.ErrorContains(t, err, "cpu_cores = NaN")
	assert.ErrorContains(t, s.Contains([]float64{1}), "want 3")
	x := []float64{0, 9, math.NaN()}
	assert.Equal(t, []float64{1, 2.048, 32 * MiB}, s.Clip(x, x))
	assert.Error(t, Space{Names: []string{"a"}, Low: []float64{1}, High: []float64{0}}.Validate())
	assert.Error(t, Space{Names: []string{"a"}}.Validate())
	require.NoError(t, ObservationSpace().Validate())
	assert.Equal(t, StateDim, ObservationSpace().Dim())
}

func TestBoundsValidate(t *testing.T) {
	require.NoError(t, DefaultBounds().Validate())
	for _, b := range []Bounds{
		{MinReplicas: 2, MaxReplicas: 1, MinCPU: 1, MaxCPU: 1, MinMemory: 1, MaxMemory: 1},
		{MinReplicas: 1, MaxReplicas: 1, MinCPU: 0, MaxCPU: 1, MinMemory: 1, MaxMemory: 1},
		{MinReplicas: 1, MaxReplicas: 1, MinCPU: 1, MaxCPU: 1, MinMemory: 2, MaxMemory: 1},
	} {
		assert.Error(t, b.Validate(), "%+v", b)
	}
}

func TestSLOPreservation(t *testing.T) {
	lat := SLO{Kind: LatencySLO, Target: 0.1}
	thr := SLO{Kind: ThroughputSLO, Target: 50}
	tests := []struct {
		name string
		slo  SLO
		m    Metrics
		want float64
	}{
		{"no SLO", SLO{}, Metrics{LatencyP99: 9}, 1},
		{"latency met", lat, Metrics{ProcessedRate: 10, LatencyP99: 0.05}, 1},
		{"latency twice the target", lat, Metrics{ProcessedRate: 10, LatencyP99: 0.2}, 0.5},
		{"idle", lat, Metrics{}, 1},
		{"everything dropped", lat, Metrics{ArrivalRate: 10, DroppedRate: 10}, 0},
		{"throughput met", thr, Metrics{ArrivalRate: 60, ProcessedRate: 55}, 1},
		{"throughput short", thr, Metrics{ArrivalRate: 60, ProcessedRate: 25}, 0.5},
		{"offered below the SLO, all served", thr, Metrics{ArrivalRate: 20, ProcessedRate: 20}, 1},
		{"no load", thr, Metrics{}, 1},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, SLOPreservation(tt.slo, tt.m), 1e-12, tt.name)
	}
	assert.Error(t, SLO{Kind: LatencySLO}.Validate())
	assert.Error(t, SLO{Kind: 9, Target: 1}.Validate())
}

func TestRewardAndState(t *testing.T) {
	m := Metrics{Replicas: 2, CPULimit: 1, MemoryLimit: 1024 * MiB, CPUUsage: 1, MemoryUsage: 512 * MiB,
		IORate: 100 * MiB, NetRate: 125e6, ArrivalRate: 40, ProcessedRate: 40, LatencyP99: 0.2}
	cpu, mem := Utilization(m)
	assert.InDelta(t, 0.5, cpu, 1e-12)
	assert.InDelta(t, 0.25, mem, 1e-12)
	assert.InDelta(t, 2, Reward(0.5, 1, 1, 1), 1e-12, "the maximum")
	assert.InDelta(t, 0, Reward(0.5, 0, 0, 0), 1e-12)
	assert.InDelta(t, 0.5*0.5*2+0.5*0.75, Reward(0.5, 0.5, cpu, mem), 1e-12)

	b := DefaultBounds()
	s := State(make([]float64, StateDim), m, 0.5, 20, b, DefaultCapacities())
	require.NoError(t, ObservationSpace().Contains(s))
	assert.InDelta(t, 1/2.048, s[StCPULimit], 1e-12)
	assert.InDelta(t, 0.1, s[StReplicas], 1e-12)
	assert.InDelta(t, 0.5, s[StIOUtil], 1e-12)
	assert.InDelta(t, 0.5, s[StNetUtil], 1e-12)
	assert.InDelta(t, 1.0/3, s[StLoadChange], 1e-4, "load doubled")
	assert.Equal(t, 1.0, LoadChange(1000, 1), "clipped")
	assert.Equal(t, 0.0, LoadChange(0, 0))
	assert.Panics(t, func() { State(make([]float64, 2), m, 1, 1, b, DefaultCapacities()) })
}

func ExampleReward() {
	m := Metrics{Replicas: 2, CPULimit: 1, MemoryLimit: 1 << 30, CPUUsage: 1.2, MemoryUsage: 1 << 29,
		ProcessedRate: 100, LatencyP99: 0.08}
	sp := SLOPreservation(SLO{Kind: LatencySLO, Target: 0.1}, m)
	cpu, mem := Utilization(m)
	fmt.Printf("SP %.2f, CPU %.2f, memory %.2f, reward %.3f\n", sp, cpu, mem, Reward(DefaultAlpha, sp, cpu, mem))
	// Output: SP 1.00, CPU 0.60, memory 0.25, reward 1.425
}

func TestNormalizedActions(t *testing.T) {
	s := ActionSpace(DefaultBounds())
	x := Denormalize(make([]float64, 3), []float64{-1, 1, 0}, s)
	assert.Equal(t, []float64{1, 2.048, (32 + 3072) / 2 * MiB}, x)
	assert.Equal(t, []float64{1, 0.128, 32 * MiB}, Denormalize(make([]float64, 3), []float64{-5, math.NaN(), -1}, s), "clipped, NaN to low")
	back := Normalize(make([]float64, 3), x, s)
	assert.InDeltaSlice(t, []float64{-1, 1, 0}, back, 1e-12)
	assert.Panics(t, func() { Denormalize(make([]float64, 2), []float64{0, 0, 0}, s) })
}

func TestMoves(t *testing.T) {
	b := DefaultBounds()
	cur := Allocation{Replicas: 1, CPU: 0.256, Memory: 32 * MiB}
	tests := []struct {
		m     Move
		want  Allocation
		legal bool
	}{
		{Noop, cur, true},
		{AddReplica, Allocation{2, 0.256, 32 * MiB}, true},
		{RemoveReplica, cur, false},
		{AddCPU, Allocation{1, 0.384, 32 * MiB}, true},
		{RemoveCPU, Allocation{1, 0.128, 32 * MiB}, true},
		{AddMemory, Allocation{1, 0.256, 64 * MiB}, true},
		{RemoveMemory, cur, false},
		{Moves, cur, false},
	}
	for _, tt := range tests {
		got, ok := Apply(tt.m, cur, b)
		assert.Equal(t, tt.legal, ok, "move %d", tt.m)
		assert.Equal(t, tt.want.Replicas, got.Replicas, "move %d", tt.m)
		assert.InDelta(t, tt.want.CPU, got.CPU, 1e-12, "move %d", tt.m)
		assert.InDelta(t, tt.want.Memory, got.Memory, 1e-3, "move %d", tt.m)
	}
	top := Allocation{Replicas: 20, CPU: 2.048, Memory: 3072 * MiB}
	for _, m := range []Move{AddReplica, AddCPU, AddMemory} {
		_, ok := Apply(m, top, b)
		assert.False(t, ok, "move %d past the top", m)
	}
	assert.Equal(t, []float64{20, 2.048, 3072 * MiB}, top.Vector(make([]float64, 3)))
	assert.Less(t, Reward(0.5, 1, 1, 1)-IllegalPenalty, Reward(0.5, 1, 1, 1), "a penalty lowers the reward")
}

func TestSLOString(t *testing.T) {
	assert.Equal(t, "p99 ≤ 12.5 ms", SLO{Kind: LatencySLO, Target: 0.0125}.String())
	assert.Equal(t, "≥ 40 req/s", SLO{Kind: ThroughputSLO, Target: 40}.String())
	assert.Equal(t, "none", SLO{}.String())
}
