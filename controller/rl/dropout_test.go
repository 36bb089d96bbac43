package rl_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

func TestDropoutGradient(t *testing.T) {
	const p, n = 0.4, 50
	rnd := rand.New(rand.NewPCG(1, 2))
	x, c := randVec(rnd, n), randVec(rnd, n)
	y := make([]float64, n)
	// A fresh layer with the same seed draws the same mask every time.
	fresh := func() *rl.Dropout {
		d, err := rl.NewDropout(p, rand.New(rand.NewPCG(7, 7)))
		require.NoError(t, err)
		return d
	}
	lossFn := func() float64 {
		fresh().Forward(y, x)
		return seqDot(c, y)
	}
	d := fresh()
	d.Forward(y, x)
	dx := make([]float64, n)
	d.Backward(dx, c)
	seqRequireClose(t, "input", dx, seqNumGrad(x, lossFn))
	lossFn()
	zeros := 0
	for i, v := range y {
		if v == 0 {
			zeros++
			continue
		}
		require.InDelta(t, x[i]/(1-p), v, 1e-12)
	}
	require.Greater(t, zeros, 0)
	require.Less(t, zeros, n)
}

func TestDropoutRateAndEval(t *testing.T) {
	const p, n = 0.25, 20000
	d, err := rl.NewDropout(p, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	require.True(t, d.Training())
	x := make([]float64, n)
	for i := range x {
		x[i] = 1
	}
	y := make([]float64, n)
	d.Forward(y, x)
	var sum float64
	zeros := 0
	for _, v := range y {
		sum += v
		if v == 0 {
			zeros++
		}
	}
	require.InDelta(t, p, float64(zeros)/n, 0.02)
	require.InDelta(t, 1, sum/n, 0.03, "inverted dropout keeps the mean")

	d.SetTraining(false)
	require.False(t, d.Training())
	d.Forward(y, x)
	require.Equal(t, x, y)
	dx := make([]float64, n)
	d.Backward(dx, x)
	require.Equal(t, x, dx)
}

func TestDropoutErrorsAndPanics(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	for _, p := range []float64{-0.1, 1, 2} {
		_, err := rl.NewDropout(p, rnd)
		require.Error(t, err, "p=%v", p)
	}
	_, err := rl.NewDropout(0.5, nil)
	require.Error(t, err)
	d, err := rl.NewDropout(0.5, rnd)
	require.NoError(t, err)
	require.Panics(t, func() { d.Backward(make([]float64, 2), make([]float64, 2)) })
	require.Panics(t, func() { d.Forward(make([]float64, 2), make([]float64, 3)) })
	d.Forward(make([]float64, 3), make([]float64, 3))
	require.Panics(t, func() { d.Backward(make([]float64, 2), make([]float64, 2)) })
}
