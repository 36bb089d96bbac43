package rl_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// seqNumGrad returns the central-difference gradient of f with respect to v.
func seqNumGrad(v []float64, f func() float64) []float64 {
	const h = 1e-5
	out := make([]float64, len(v))
	for i := range v {
		orig := v[i]
		v[i] = orig + h
		lp := f()
		v[i] = orig - h
		lm := f()
		v[i] = orig
		out[i] = (lp - lm) / (2 * h)
	}
	return out
}

func seqDot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func seqRequireClose(t *testing.T, what string, analytic, numeric []float64) {
	t.Helper()
	require.Less(t, relErr(analytic, numeric), 1e-6, what)
	for i := range analytic {
		require.InDelta(t, numeric[i], analytic[i], 1e-6*math.Max(1, math.Abs(numeric[i])), "%s %d", what, i)
	}
}

func TestGRUGradients(t *testing.T) {
	const B, T, F, H = 2, 4, 3, 5
	for _, withH0 := range []bool{false, true} {
		rnd := rand.New(rand.NewPCG(1, 3))
		g, err := rl.NewGRU(F, H, rnd)
		require.NoError(t, err)
		require.Equal(t, 3*H*(F+H+2), g.Params().Len())
		x, c := randVec(rnd, B*T*F), randVec(rnd, B*T*H)
		var h0 []float64
		if withH0 {
			h0 = randVec(rnd, B*H)
		}
		y := make([]float64, B*T*H)
		lossFn := func() float64 {
			g.Forward(y, x, h0, B, T)
			return seqDot(c, y)
		}
		p := g.Params()
		p.ZeroGrad()
		lossFn()
		dx, dh0 := make([]float64, len(x)), make([]float64, B*H)
		g.Backward(dx, dh0, c, B, T)
		analytic := append([]float64(nil), p.Grads()...)
		seqRequireClose(t, "parameter", analytic, seqNumGrad(p.Values(), lossFn))
		seqRequireClose(t, "input", dx, seqNumGrad(x, lossFn))
		if withH0 {
			seqRequireClose(t, "h0", dh0, seqNumGrad(h0, lossFn))
		}
	}
}

func TestBiGRUGradients(t *testing.T) {
	const B, T, F, H = 2, 3, 3, 4
	rnd := rand.New(rand.NewPCG(5, 8))
	m, err := rl.NewBiGRU(rl.BiGRUConfig{In: F, Hidden: H}, rnd)
	require.NoError(t, err)
	require.Equal(t, 2, m.Config().Layers)
	require.Equal(t, 2*3*H*(F+H+2)+2*3*H*(2*H+H+2), m.Params().Len())
	x, c := randVec(rnd, B*T*F), randVec(rnd, B*T*2*H)
	y := make([]float64, len(c))
	lossFn := func() float64 {
		m.Forward(y, x, B, T)
		return seqDot(c, y)
	}
	m.Params().ZeroGrad()
	lossFn()
	dx := make([]float64, len(x))
	m.Backward(dx, c, B, T)
	analytic := append([]float64(nil), m.Params().Grads()...)
	seqRequireClose(t, "parameter", analytic, seqNumGrad(m.Params().Values(), lossFn))
	seqRequireClose(t, "input", dx, seqNumGrad(x, lossFn))
}

// The time-reversed direction must see the future: with one step the two
// directions of a layer agree, and the backward state at t=0 depends on the
// last input.
func TestBiGRUDirections(t *testing.T) {
	const B, T, F, H = 1, 5, 2, 3
	m, err := rl.NewBiGRU(rl.BiGRUConfig{In: F, Hidden: H, Layers: 1}, rand.New(rand.NewPCG(2, 2)))
	require.NoError(t, err)
	x := randVec(rand.New(rand.NewPCG(3, 3)), B*T*F)
	y1, y2 := make([]float64, B*T*2*H), make([]float64, B*T*2*H)
	m.Forward(y1, x, B, T)
	x[len(x)-1] += 1
	m.Forward(y2, x, B, T)
	require.Equal(t, y1[:H], y2[:H], "forward state at t=0 must not see the last input")
	require.NotEqual(t, y1[H:2*H], y2[H:2*H], "backward state at t=0 must see the last input")
}

func TestGRUOrderMatters(t *testing.T) {
	const T, F, H = 6, 2, 8
	g, err := rl.NewGRU(F, H, rand.New(rand.NewPCG(4, 4)))
	require.NoError(t, err)
	x := randVec(rand.New(rand.NewPCG(9, 9)), T*F)
	rev := make([]float64, len(x))
	for s := range T {
		copy(rev[s*F:(s+1)*F], x[(T-1-s)*F:(T-s)*F])
	}
	y, yr := make([]float64, T*H), make([]float64, T*H)
	g.Forward(y, x, nil, 1, T)
	g.Forward(yr, rev, nil, 1, T)
	last := (T - 1) * H
	require.Greater(t, relErr(y[last:], yr[last:]), 1e-3)
}

// A GRU followed by a linear readout of the last state learns the sign of the
// first element of a noisy sequence, which needs memory over all steps.
func TestGRULearnsFirstSign(t *testing.T) {
	const B, T, H = 32, 8, 8
	rnd := rand.New(rand.NewPCG(11, 12))
	g, err := rl.NewGRU(1, H, rnd)
	require.NoError(t, err)
	head, err := rl.NewDense(H, 1, rl.Identity, rnd)
	require.NoError(t, err)
	optG, optH := rl.NewAdam(1e-2), rl.NewAdam(1e-2)
	x, hs := make([]float64, B*T), make([]float64, B*T*H)
	last, pred, dpred := make([]float64, B*H), make([]float64, B), make([]float64, B)
	dlast, dhs, target := make([]float64, B*H), make([]float64, B*T*H), make([]float64, B)
	var mse float64
	for range 400 {
		for i := range x {
			x[i] = rnd.NormFloat64()
		}
		for b := range B {
			target[b] = math.Copysign(1, x[b*T])
		}
		g.Forward(hs, x, nil, B, T)
		for b := range B {
			copy(last[b*H:(b+1)*H], hs[(b*T+T-1)*H:(b*T+T)*H])
		}
		head.Forward(pred, last, B)
		mse = 0
		for b := range B {
			e := pred[b] - target[b]
			mse += e * e / B
			dpred[b] = 2 * e / B
		}
		g.Params().ZeroGrad()
		head.Params().ZeroGrad()
		head.Backward(dlast, dpred, B)
		clear(dhs)
		for b := range B {
			copy(dhs[(b*T+T-1)*H:(b*T+T)*H], dlast[b*H:(b+1)*H])
		}
		g.Backward(nil, nil, dhs, B, T)
		optG.Step(g.Params())
		optH.Step(head.Params())
	}
	require.Less(t, mse, 0.1, "final minibatch MSE")
}

// TestGRUZeroAllocs runs shapes large enough for the packed kernel (and a
// BiGRU backward pass without an input gradient, as an encoder of data is run).
func TestGRUZeroAllocs(t *testing.T) {
	const B, T, F, H = 4, 8, 12, 32
	rnd := rand.New(rand.NewPCG(1, 1))
	g, err := rl.NewGRU(F, H, rnd)
	require.NoError(t, err)
	m, err := rl.NewBiGRU(rl.BiGRUConfig{In: F, Hidden: H}, rnd)
	require.NoError(t, err)
	d, err := rl.NewDropout(0.3, rnd)
	require.NoError(t, err)
	x, h0 := randVec(rnd, B*T*F), randVec(rnd, B*H)
	y, dy, dx, dh0 := make([]float64, B*T*H), randVec(rnd, B*T*H), make([]float64, B*T*F), make([]float64, B*H)
	y2, dy2 := make([]float64, B*T*2*H), randVec(rnd, B*T*2*H)
	step := func() {
		g.Forward(y, x, h0, B, T)
		g.Backward(dx, dh0, dy, B, T)
		m.Forward(y2, x, B, T)
		m.Backward(dx, dy2, B, T)
		d.Forward(y2, y2)
		d.Backward(dy2, dy2)
		m.Forward(y2, x, B, T)
		m.Backward(nil, dy2, B, T)
		m.Forward(y2[:2*T*2*H], x[:2*T*F], 2, T) // smaller shape reuses workspaces
	}
	step()
	require.Zero(t, testing.AllocsPerRun(20, step))
}

func TestGRUErrorsAndPanics(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	_, err := rl.NewGRU(0, 3, rnd)
	require.Error(t, err)
	_, err = rl.NewGRU(3, 3, nil)
	require.Error(t, err)
	for _, cfg := range []rl.BiGRUConfig{{In: 0, Hidden: 2}, {In: 2, Hidden: 0}, {In: 2, Hidden: 2, Layers: -1}} {
		_, err = rl.NewBiGRU(cfg, rnd)
		require.Error(t, err, "%+v", cfg)
	}
	_, err = rl.NewBiGRU(rl.BiGRUConfig{In: 1, Hidden: 1}, nil)
	require.Error(t, err)

	g, err := rl.NewGRU(2, 3, rnd)
	require.NoError(t, err)
	require.Panics(t, func() { g.Backward(nil, nil, make([]float64, 6), 1, 2) }) // no Forward yet
	require.Panics(t, func() { g.Forward(make([]float64, 6), make([]float64, 3), nil, 1, 2) })
	require.Panics(t, func() { g.Forward(make([]float64, 5), make([]float64, 4), nil, 1, 2) })
	require.Panics(t, func() { g.Forward(make([]float64, 6), make([]float64, 4), make([]float64, 2), 1, 2) })
	g.Forward(make([]float64, 6), make([]float64, 4), nil, 1, 2)
	require.Panics(t, func() { g.Backward(nil, nil, make([]float64, 6), 1, 1) })
	require.Panics(t, func() { g.Backward(make([]float64, 3), nil, make([]float64, 6), 1, 2) })
	require.Panics(t, func() { g.Backward(nil, make([]float64, 2), make([]float64, 6), 1, 2) })

	m, err := rl.NewBiGRU(rl.BiGRUConfig{In: 2, Hidden: 3, Layers: 1}, rnd)
	require.NoError(t, err)
	require.Panics(t, func() { m.Backward(nil, make([]float64, 12), 1, 2) })
	require.Panics(t, func() { m.Forward(make([]float64, 6), make([]float64, 4), 1, 2) })
	m.Forward(make([]float64, 12), make([]float64, 4), 1, 2)
	require.Panics(t, func() { m.Backward(make([]float64, 3), make([]float64, 12), 1, 2) })
}
