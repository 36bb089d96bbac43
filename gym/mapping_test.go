package gym

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateOf is the state of an allocation (the other features 0).
func stateOf(a Allocation, b Bounds) []float64 {
	s := make([]float64, StateDim+4) // an embedding after the state
	State(s[:StateDim], Metrics{Replicas: a.Replicas, CPULimit: a.CPU, MemoryLimit: a.Memory}, 1, 0, b, DefaultCapacities())
	return s
}

func TestRelativeMapping(t *testing.T) {
	b := DefaultBounds()
	cur := Allocation{Replicas: 4, CPU: 0.5, Memory: 256 * MiB}
	assert.Equal(t, cur, Current(stateOf(cur, b), b))
	st := cur
	for _, tc := range []struct {
		name string
		a    []float64
		want Allocation
	}{
		{"zero keeps", []float64{0, 0, 0}, cur},
		{"NaN keeps", []float64{math.NaN(), math.NaN(), math.NaN()}, cur},
		{"+1 doubles", []float64{1, 1, 1}, Allocation{8, 1, 512 * MiB}},
		{"−1 halves", []float64{-1, -1, -1}, Allocation{2, 0.25, 128 * MiB}},
		{"clipped to ±1", []float64{5, -7, 3}, Allocation{8, 0.25, 512 * MiB}},
		{"half a step", []float64{0.5, 0.5, -0.5}, Allocation{6, 0.5 * math.Sqrt2, 256 * MiB / math.Sqrt2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Relative.Target(make([]float64, ActDim), tc.a, st, b)
			assert.Equal(t, float64(tc.want.Replicas), got[ActReplicas])
			assert.InDelta(t, tc.want.CPU, got[ActCPU], 1e-9)
			assert.InDelta(t, tc.want.Memory, got[ActMemory], 1)
		})
	}

	t.Run("bounds", func(t *testing.T) {
		hi := Allocation{Replicas: b.MaxReplicas, CPU: b.MaxCPU, Memory: b.MaxMemory}
		got := Relative.Target(make([]float64, ActDim), []float64{1, 1, 1}, hi, b)
		assert.Equal(t, []float64{float64(b.MaxReplicas), b.MaxCPU, b.MaxMemory}, got)
		lo := Allocation{Replicas: b.MinReplicas, CPU: b.MinCPU, Memory: b.MinMemory}
		got = Relative.Target(make([]float64, ActDim), []float64{-1, -1, -1}, lo, b)
		assert.Equal(t, []float64{float64(b.MinReplicas), b.MinCPU, b.MinMemory}, got)
		// One replica still grows: a scale-up of more than √2 reaches two.
		got = Relative.Target(make([]float64, ActDim), []float64{0.6, 0, 0}, lo, b)
		assert.Equal(t, 2.0, got[ActReplicas])
		// An unknown allocation (nothing runs yet) starts from the low bounds.
		got = Relative.Target(make([]float64, ActDim), []float64{0, 0, 0}, Allocation{CPU: math.NaN()}, b)
		assert.Equal(t, []float64{float64(b.MinReplicas), b.MinCPU, b.MinMemory}, got)
	})

	t.Run("encode inverts target", func(t *testing.T) {
		for _, a := range [][]float64{{0, 0, 0}, {1, -1, 0.3}, {-0.42, 0.77, -0.9}} {
			x := Relative.Target(make([]float64, ActDim), a, st, b)
			back := Relative.Encode(make([]float64, ActDim), x, st, b)
			again := Relative.Target(make([]float64, ActDim), back, st, b)
			assert.InDeltaSlice(t, x, again, 1e-6, "action %v", a)
			assert.InDelta(t, a[ActCPU], back[ActCPU], 1e-9)
			assert.InDelta(t, a[ActMemory], back[ActMemory], 1e-9)
		}
		// An allocation more than a step away encodes as the full step.
		far := Relative.Encode(make([]float64, ActDim), []float64{20, 2, 32 * MiB}, st, b)
		assert.Equal(t, []float64{1, 1, -1}, far)
	})
}

func TestAbsoluteMappingIsTheBox(t *testing.T) {
	b := DefaultBounds()
	st := Allocation{Replicas: 4, CPU: 0.5, Memory: 256 * MiB}
	a := []float64{0, -1, 1}
	got := Absolute.Target(make([]float64, ActDim), a, st, b)
	assert.Equal(t, Denormalize(make([]float64, ActDim), a, ActionSpace(b)), got)
	assert.InDeltaSlice(t, a, Absolute.Encode(make([]float64, ActDim), got, st, b), 1e-12)
}

func TestParseMapping(t *testing.T) {
	for _, m := range Mappings {
		got, err := ParseMapping(m.String())
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	_, err := ParseMapping("log")
	assert.ErrorContains(t, err, `"log"`)
	assert.Equal(t, "Mapping(7)", Mapping(7).String())
}

// An untrained agent's action (near 0) keeps what runs under Relative but
// asks for the box's centre under Absolute.
func ExampleMapping_Target() {
	b := DefaultBounds()
	st := Allocation{Replicas: 2, CPU: 0.25, Memory: 128 * MiB}
	for _, m := range Mappings {
		x := m.Target(make([]float64, ActDim), []float64{0, 0, 0}, st, b)
		fmt.Printf("%s: %g replicas, %.3g cores, %g MiB\n", m, x[ActReplicas], x[ActCPU], x[ActMemory]/MiB)
	}
	// Output:
	// relative: 2 replicas, 0.25 cores, 128 MiB
	// absolute: 10.5 replicas, 1.09 cores, 1552 MiB
}
