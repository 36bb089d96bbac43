package rl_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// fitMSE takes steps Adam updates of m on y = f(x) with minibatches drawn from
// rnd and returns the last minibatch's mean squared error.
func fitMSE(m *rl.MLP, opt rl.Optimizer, rnd *rand.Rand, steps, batch int, lo, hi float64, f func([]float64) float64) float64 {
	in := m.InDim()
	x, y, pred, dy := make([]float64, batch*in), make([]float64, batch), make([]float64, batch), make([]float64, batch)
	var mse float64
	for range steps {
		for k := 0; k < batch; k++ {
			for j := 0; j < in; j++ {
				x[k*in+j] = lo + (hi-lo)*rnd.Float64()
			}
			y[k] = f(x[k*in : (k+1)*in])
		}
		m.Forward(pred, x, batch)
		mse = 0
		for k := range pred {
			e := pred[k] - y[k]
			mse += e * e
			dy[k] = 2 * e / float64(batch)
		}
		mse /= float64(batch)
		m.Params().ZeroGrad()
		m.Backward(nil, dy, batch)
		opt.Step(m.Params())
	}
	return mse
}

func toy(x []float64) float64 { return math.Sin(x[0]) + 0.5*x[1] }

func trainToy(t *testing.T, seed uint64) []float64 {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 42))
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{2, 16, 16, 1}, Hidden: rl.ReLU, Output: rl.Identity}, rnd)
	require.NoError(t, err)
	fitMSE(m, rl.NewAdam(1e-2), rnd, 100, 16, -2, 2, toy)
	return append([]float64(nil), m.Params().Values()...)
}

// TestReleaseKeepsTraining: dropping an MLP's batch workspaces and
// gradients between updates changes nothing in what it learns, bit for bit.
func TestReleaseKeepsTraining(t *testing.T) {
	train := func(release bool) []float64 {
		rnd := rand.New(rand.NewPCG(3, 42))
		m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{2, 16, 16, 1}, Hidden: rl.ReLU, Output: rl.Identity}, rnd)
		require.NoError(t, err)
		opt := rl.NewAdam(1e-2)
		for range 20 {
			fitMSE(m, opt, rnd, 5, 16, -2, 2, toy)
			if release {
				m.Release()
				require.Nil(t, rl.GradStorage(m.Params()), "Release drops the gradients")
			}
		}
		return append([]float64(nil), m.Params().Values()...)
	}
	kept, released := train(false), train(true)
	for i := range kept {
		require.Equal(t, math.Float64bits(kept[i]), math.Float64bits(released[i]), "parameter %d", i)
	}
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{2, 4, 1}, Hidden: rl.ReLU, Output: rl.Identity}, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	m.Forward(make([]float64, 1), []float64{1, 2}, 1)
	m.Release()
	require.Panics(t, func() { m.Backward(nil, []float64{1}, 1) }, "Backward needs a Forward after Release")
}

func TestSameSeedBitIdentical(t *testing.T) {
	a, b, c := trainToy(t, 1), trainToy(t, 1), trainToy(t, 2)
	require.Len(t, a, len(b))
	for i := range a {
		require.Equal(t, math.Float64bits(a[i]), math.Float64bits(b[i]), "parameter %d", i)
	}
	require.NotEqual(t, a, c, "different seeds must give different weights")
}

func TestMLPLearnsSine(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 9))
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{1, 32, 32, 1}, Hidden: rl.Tanh, Output: rl.Identity}, rnd)
	require.NoError(t, err)
	fitMSE(m, rl.NewAdam(1e-2), rnd, 1500, 32, -math.Pi, math.Pi, func(x []float64) float64 { return math.Sin(x[0]) })

	// Evaluate on a fixed grid, not on training batches.
	const n = 101
	x, y := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i] = -math.Pi + 2*math.Pi*float64(i)/(n-1)
	}
	m.Forward(y, x, n)
	var mse float64
	for i := range x {
		e := y[i] - math.Sin(x[i])
		mse += e * e / n
	}
	require.Less(t, mse, 2e-3, "sine regression MSE")
}

func TestSteadyStateNoAllocs(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{12, 40, 40, 1}, Hidden: rl.ReLU, Output: rl.Identity}, rnd)
	require.NoError(t, err)
	const batch = 64
	x, y, dy, dx := randVec(rnd, batch*12), make([]float64, batch), randVec(rnd, batch), make([]float64, batch*12)
	opt := rl.NewAdam(1e-3)
	step := func() {
		m.Forward(y, x, batch)
		m.Params().ZeroGrad()
		m.Backward(dx, dy, batch)
		rl.ClipGradNorm(m.Params(), 1)
		opt.Step(m.Params())
		m.Forward(y[:1], x[:12], 1) // smaller batch reuses workspaces
	}
	step()
	require.Zero(t, testing.AllocsPerRun(20, step))
}

// An MLP trained with Adam learns XOR.
func Example() {
	rnd := rand.New(rand.NewPCG(1, 2))
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{2, 8, 1}, Hidden: rl.Tanh, Output: rl.Identity}, rnd)
	if err != nil {
		panic(err)
	}
	opt := rl.NewAdam(0.05)
	x := []float64{0, 0, 0, 1, 1, 0, 1, 1}
	target := []float64{0, 1, 1, 0}
	y, dy := make([]float64, 4), make([]float64, 4)
	for range 500 {
		m.Forward(y, x, 4)
		for i := range y {
			dy[i] = 2 * (y[i] - target[i]) / 4 // d(MSE)/dy
		}
		m.Params().ZeroGrad()
		m.Backward(nil, dy, 4)
		opt.Step(m.Params())
	}
	m.Forward(y, x, 4)
	for i := range y {
		fmt.Printf("%v XOR %v ≈ %.0f\n", x[2*i], x[2*i+1], math.Abs(y[i]))
	}
	// Output:
	// 0 XOR 0 ≈ 0
	// 0 XOR 1 ≈ 1
	// 1 XOR 0 ≈ 1
	// 1 XOR 1 ≈ 0
}
