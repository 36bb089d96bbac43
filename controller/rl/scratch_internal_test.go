package rl

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSizeClasses: every length fits its class, wastes at most a quarter
// of it, and a class holds one capacity only.
func TestSizeClasses(t *testing.T) {
	capOf := map[int]int{}
	for n := 1; n <= 1<<16; n++ {
		c, size := sizeClass(n)
		require.GreaterOrEqual(t, size, n)
		if n > 8 {
			require.LessOrEqual(t, float64(size), 1.25*float64(n), "n %d", n)
		}
		require.Less(t, c, len(floatPools))
		if prev, ok := capOf[c]; ok {
			require.Equal(t, prev, size, "class %d", c)
		}
		capOf[c] = size
		c2, size2 := sizeClass(size)
		require.Equal(t, c, c2, "a class's capacity is in the class")
		require.Equal(t, size, size2)
	}
}

// TestBorrowedGradsStartAtZero: a network's gradients after a release are
// zero even when the pool hands back storage another network dirtied, and
// a network that never trains (a target) holds no gradients at all.
func TestBorrowedGradsStartAtZero(t *testing.T) {
	p := NewParams(100)
	assert.Nil(t, p.grads, "allocated on first use")
	for i := range p.Grads() {
		p.grads[i] = 7
	}
	p.ReleaseGrads()
	q := NewParams(100)
	for _, g := range q.Grads() {
		require.Zero(t, g)
	}
	assert.Empty(t, NewParams(0).Grads())
}

// TestAdamCompact: compacting after every step follows the uncompacted
// optimiser up to float32 rounding of the moments; the compacted moments
// are exactly the rounded ones, checkpoints hold them, and a Step after
// loading resumes like the compacted optimiser.
func TestAdamCompact(t *testing.T) {
	const n = 50
	rnd := rand.New(rand.NewPCG(3, 4))
	target := make([]float64, n)
	for i := range target {
		target[i] = rnd.NormFloat64()
	}
	step := func(p *Params, o *Adam) {
		for i, v := range p.Values() {
			p.Grads()[i] = 2 * (v - target[i]) * (1 + 0.1*float64(i%3))
		}
		o.Step(p)
	}
	plain, compact := NewParams(n), NewParams(n)
	po, co := NewAdam(0.05), NewAdam(0.05)
	co.Compact() // before the first step: nothing to keep
	assert.False(t, co.compacted())
	for range 200 {
		step(plain, po)
		plain.ReleaseGrads()
		step(compact, co)
		compact.ReleaseGrads()
		m, v := co.m, co.v
		co.Compact()
		require.Nil(t, co.m)
		for i := range m {
			require.Equal(t, float32(m[i]), co.m32[i])
			require.Equal(t, float32(v[i]), co.v32[i])
		}
	}
	for i, v := range plain.Values() {
		require.InDelta(t, v, compact.Values()[i], 1e-7*(1+math.Abs(v)), "parameter %d", i)
		require.InDelta(t, target[i], v, 0.05, "converged")
	}

	ck := NewCheckpoint()
	ck.PutAdam("opt", co)
	ck.PutParams("p", compact)
	m, ok := ck.Get("opt/m")
	require.True(t, ok)
	for i, x := range co.m32 {
		require.Equal(t, float64(x), m[i])
	}
	loaded, lp := NewAdam(0.05), NewParams(n)
	require.NoError(t, ck.LoadParams("p", lp))
	require.NoError(t, ck.LoadAdam("opt", loaded, lp))
	assert.Equal(t, co.Steps(), loaded.Steps())
	step(compact, co)
	step(lp, loaded)
	assert.Equal(t, compact.Values(), lp.Values(), "a loaded checkpoint resumes the compacted optimiser")
}
