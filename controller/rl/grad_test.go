package rl_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// net is the part of Dense and MLP the gradient checks need.
type net interface {
	Forward(dst, x []float64, batch int)
	Backward(dx, dy []float64, batch int)
	Params() *rl.Params
}

func randVec(rnd *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rnd.NormFloat64()
	}
	return v
}

// loss is Σ c ⊙ f(x), so dL/dy = c.
func loss(n net, x, c []float64, batch int) float64 {
	y := make([]float64, len(c))
	n.Forward(y, x, batch)
	var s float64
	for i := range y {
		s += c[i] * y[i]
	}
	return s
}

// relErr is the vector-wise relative error ‖a−b‖/(‖a‖+‖b‖).
func relErr(a, b []float64) float64 {
	var d, na, nb float64
	for i := range a {
		d += (a[i] - b[i]) * (a[i] - b[i])
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na+nb == 0 {
		return 0
	}
	return math.Sqrt(d) / (math.Sqrt(na) + math.Sqrt(nb))
}

// checkGrads compares analytic parameter and input gradients with central
// differences.
func checkGrads(t *testing.T, n net, in, out, batch int, rnd *rand.Rand) {
	t.Helper()
	const h = 1e-5
	x := randVec(rnd, batch*in)
	c := randVec(rnd, batch*out)
	p := n.Params()
	p.ZeroGrad()
	y := make([]float64, batch*out)
	n.Forward(y, x, batch)
	dx := make([]float64, batch*in)
	n.Backward(dx, c, batch)
	analytic := append([]float64(nil), p.Grads()...)

	numeric := make([]float64, p.Len())
	vals := p.Values()
	for i := range vals {
		orig := vals[i]
		vals[i] = orig + h
		lp := loss(n, x, c, batch)
		vals[i] = orig - h
		lm := loss(n, x, c, batch)
		vals[i] = orig
		numeric[i] = (lp - lm) / (2 * h)
	}
	require.Less(t, relErr(analytic, numeric), 1e-6, "parameter gradients")
	for i := range analytic {
		require.InDelta(t, numeric[i], analytic[i], 1e-6*math.Max(1, math.Abs(numeric[i])), "parameter %d", i)
	}

	numX := make([]float64, len(x))
	for i := range x {
		orig := x[i]
		x[i] = orig + h
		lp := loss(n, x, c, batch)
		x[i] = orig - h
		lm := loss(n, x, c, batch)
		x[i] = orig
		numX[i] = (lp - lm) / (2 * h)
	}
	require.Less(t, relErr(dx, numX), 1e-6, "input gradients")
	for i := range dx {
		require.InDelta(t, numX[i], dx[i], 1e-6*math.Max(1, math.Abs(numX[i])), "input %d", i)
	}
}

func TestDenseGradients(t *testing.T) {
	for _, act := range []rl.Activation{rl.Identity, rl.ReLU, rl.Tanh} {
		t.Run(act.String(), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(1, uint64(act)))
			d, err := rl.NewDense(4, 3, act, rnd)
			require.NoError(t, err)
			// Non-zero biases so the bias path is exercised.
			for i := range d.Bias() {
				d.Bias()[i] = 0.1 * rnd.NormFloat64()
			}
			checkGrads(t, d, 4, 3, 5, rnd)
		})
	}
}

func TestMLPGradients(t *testing.T) {
	cases := []struct {
		hidden, output rl.Activation
		finalInit      float64
	}{
		{rl.ReLU, rl.Identity, 0},
		{rl.Tanh, rl.Tanh, 0},
		{rl.ReLU, rl.Tanh, 3e-3},
		{rl.Tanh, rl.Identity, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v-%v-%v", tc.hidden, tc.output, tc.finalInit), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(7, 11))
			m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{3, 8, 8, 2}, Hidden: tc.hidden, Output: tc.output, FinalInit: tc.finalInit}, rnd)
			require.NoError(t, err)
			require.Equal(t, 3*8+8+8*8+8+8*2+2, m.Params().Len())
			checkGrads(t, m, 3, 2, 5, rnd)
		})
	}
}

func TestBackwardAccumulatesAndNilDx(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{3, 4, 2}, Hidden: rl.Tanh, Output: rl.Identity}, rnd)
	require.NoError(t, err)
	x, dy, y := randVec(rnd, 6), randVec(rnd, 4), make([]float64, 4)
	m.Forward(y, x, 2)
	m.Backward(nil, dy, 2)
	once := append([]float64(nil), m.Params().Grads()...)
	m.Backward(nil, dy, 2)
	for i, g := range m.Params().Grads() {
		require.InDelta(t, 2*once[i], g, 1e-12)
	}
}

func TestMLPErrorsAndPanics(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	for _, cfg := range []rl.MLPConfig{
		{Sizes: []int{3}},
		{Sizes: []int{3, 0, 1}},
		{Sizes: []int{3, 1}, Output: rl.Activation(9)},
		{Sizes: []int{3, 1}, FinalInit: -1},
	} {
		_, err := rl.NewMLP(cfg, rnd)
		require.Error(t, err, "%+v", cfg)
	}
	_, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{1, 1}}, nil)
	require.Error(t, err)
	_, err = rl.NewDense(0, 1, rl.ReLU, rnd)
	require.Error(t, err)

	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{2, 3, 1}, Hidden: rl.ReLU}, rnd)
	require.NoError(t, err)
	require.Panics(t, func() { m.Forward(make([]float64, 2), make([]float64, 3), 2) })
	require.Panics(t, func() { m.Backward(nil, make([]float64, 1), 1) }) // no Forward yet
	m.Forward(make([]float64, 2), make([]float64, 4), 2)
	require.Panics(t, func() { m.Backward(nil, make([]float64, 1), 1) })
	require.Panics(t, func() { m.Backward(make([]float64, 1), make([]float64, 2), 2) })
}

func TestCloneIsIndependent(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{2, 4, 1}, Hidden: rl.ReLU}, rnd)
	require.NoError(t, err)
	c := m.Clone()
	require.Equal(t, m.Params().Values(), c.Params().Values())
	c.Params().Values()[0] += 1
	require.NotEqual(t, m.Params().Values()[0], c.Params().Values()[0])
	require.Equal(t, m.Config(), c.Config())
}

func TestBackwardInput(t *testing.T) {
	for _, sizes := range [][]int{{5, 40, 40, 1}, {3, 200, 2}} { // narrow kernels and BLAS
		rnd := rand.New(rand.NewPCG(5, 6))
		m, err := rl.NewMLP(rl.MLPConfig{Sizes: sizes, Hidden: rl.ReLU, Output: rl.Identity}, rnd)
		require.NoError(t, err)
		in, out, b := sizes[0], sizes[len(sizes)-1], 4
		x, dy, y := randVec(rnd, b*in), randVec(rnd, b*out), make([]float64, b*out)
		m.Forward(y, x, b)
		want := make([]float64, b*in)
		m.Backward(want, dy, b)
		grads := append([]float64(nil), m.Params().Grads()...)
		got := make([]float64, b*in)
		m.BackwardInput(got, dy, b)
		assert.Equal(t, want, got, "same input gradient as Backward")
		assert.Equal(t, grads, m.Params().Grads(), "parameter gradients untouched")
		assert.Panics(t, func() { m.BackwardInput(nil, dy, b) })
	}
}
