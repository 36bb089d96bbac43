package rl

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKernelPathMatchesGonum runs an MLP and a BiGRU large enough for the
// packed kernel forward and backward on both arithmetic paths and requires
// the same outputs, parameter gradients and input gradients to rounding. The
// finite-difference checks use small shapes (gonum's path), so this ties the
// kernel path to them.
func TestKernelPathMatchesGonum(t *testing.T) {
	if !avx512Supported() && !avx2Supported() {
		t.Skip("no AVX-512 or AVX2: only gonum's path runs here")
	}
	type result struct{ y, grads, dx []float64 }
	run := func(t *testing.T, path, net string) result {
		setPath(t, path)
		rnd := rand.New(rand.NewPCG(21, 22))
		switch net {
		case "mlp":
			const batch = 64
			m, err := NewMLP(MLPConfig{Sizes: []int{12, 40, 40, 3}, Hidden: ReLU, Output: Tanh}, rnd)
			require.NoError(t, err)
			x, dy := randSlice(rnd, batch*12), randSlice(rnd, batch*3)
			y, dx := make([]float64, batch*3), make([]float64, batch*12)
			m.Forward(y, x, batch)
			m.Params().ZeroGrad()
			m.Backward(dx, dy, batch)
			return result{y, append([]float64(nil), m.Params().Grads()...), dx}
		default:
			const B, T, F, H = 5, 9, 13, 40
			m, err := NewBiGRU(BiGRUConfig{In: F, Hidden: H}, rnd)
			require.NoError(t, err)
			x, dy := randSlice(rnd, B*T*F), randSlice(rnd, B*T*2*H)
			y, dx := make([]float64, B*T*2*H), make([]float64, B*T*F)
			m.Forward(y, x, B, T)
			m.Backward(dx, dy, B, T)
			return result{y, append([]float64(nil), m.Params().Grads()...), dx}
		}
	}
	for _, path := range kernelPaths[:2] {
		if !pathSupported(path) {
			continue
		}
		for _, net := range []string{"mlp", "bigru"} {
			t.Run(path+"/"+net, func(t *testing.T) {
				k, g := run(t, path, net), run(t, "gonum", net)
				for _, c := range []struct {
					name      string
					got, want []float64
				}{{"output", k.y, g.y}, {"parameter gradient", k.grads, g.grads}, {"input gradient", k.dx, g.dx}} {
					require.Len(t, c.got, len(c.want))
					for i := range c.want {
						require.LessOrEqual(t, math.Abs(c.got[i]-c.want[i]), 1e-12*(1+math.Abs(c.want[i])), "%s %d: kernel %v, gonum %v", c.name, i, c.got[i], c.want[i])
					}
				}
			})
		}
	}
}

// TestBiGRUHelperPanicReachesCaller makes the reverse direction's goroutine
// panic and requires the panic on the caller, after which the BiGRU works.
func TestBiGRUHelperPanicReachesCaller(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	m, err := NewBiGRU(BiGRUConfig{In: 3, Hidden: 4}, rnd)
	require.NoError(t, err)
	m.rev = 99 // no such layer: the helper indexes out of range
	require.Panics(t, func() { m.withReverse(func() {}) })
	x, y := randSlice(rnd, 2*3*3), make([]float64, 2*3*8)
	require.NotPanics(t, func() { m.Forward(y, x, 2, 3) })
}
