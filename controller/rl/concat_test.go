package rl_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

func TestConcatRows(t *testing.T) {
	dst := make([]float64, 2*3)
	rl.ConcatRows(dst, []float64{1, 2, 3, 4}, []float64{9, 8}, 2, 2, 1)
	assert.Equal(t, []float64{1, 2, 9, 3, 4, 8}, dst)
	rl.ConcatRows(dst, []float64{1, 2, 3, 4}, []float64{7}, 2, 2, 1) // shared
	assert.Equal(t, []float64{1, 2, 7, 3, 4, 7}, dst)

	dx, dy := make([]float64, 4), make([]float64, 2)
	rl.SplitRows(dx, dy, []float64{1, 2, 9, 3, 4, 8}, 2, 2, 1)
	assert.Equal(t, []float64{1, 2, 3, 4}, dx)
	assert.Equal(t, []float64{9, 8}, dy)
	shared := []float64{100}
	rl.SplitRows(nil, shared, []float64{1, 2, 9, 3, 4, 8}, 2, 2, 1)
	assert.Equal(t, []float64{17}, shared, "a shared embedding gets the sum")

	assert.Panics(t, func() { rl.ConcatRows(dst, []float64{1}, []float64{1}, 2, 2, 1) })
	assert.Panics(t, func() { rl.SplitRows(dx, dy, []float64{1}, 2, 2, 1) })
}

// An MLP over [state, embedding] trained end to end: the embedding's
// gradient from SplitRows matches finite differences of the loss.
func TestConcatGradient(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{5, 8, 1}, Hidden: rl.Tanh, Output: rl.Identity}, rnd)
	require.NoError(t, err)
	const b, ns, nz = 3, 3, 2
	s := randVec(rnd, b*ns)
	z := randVec(rnd, nz)
	loss := func(z []float64) float64 {
		x, y := make([]float64, b*(ns+nz)), make([]float64, b)
		rl.ConcatRows(x, s, z, b, ns, nz)
		m.Forward(y, x, b)
		var l float64
		for _, v := range y {
			l += v * v / 2
		}
		return l
	}
	loss(z)
	x, y := make([]float64, b*(ns+nz)), make([]float64, b)
	rl.ConcatRows(x, s, z, b, ns, nz)
	m.Forward(y, x, b)
	g := make([]float64, b*(ns+nz))
	m.BackwardInput(g, y, b) // ∂(Σy²/2)/∂y = y
	dz := make([]float64, nz)
	rl.SplitRows(nil, dz, g, b, ns, nz)
	const h = 1e-6
	for i := range z {
		zp, zm := append([]float64(nil), z...), append([]float64(nil), z...)
		zp[i] += h
		zm[i] -= h
		assert.InDelta(t, (loss(zp)-loss(zm))/(2*h), dz[i], 1e-7, "dz[%d]", i)
	}
}
