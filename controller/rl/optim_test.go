package rl_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

func TestParamsCopyPolyakClip(t *testing.T) {
	a, b := rl.NewParams(3), rl.NewParams(3)
	copy(b.Values(), []float64{1, 2, 3})
	copy(b.Grads(), []float64{9, 9, 9})
	require.NoError(t, a.CopyFrom(b))
	assert.Equal(t, []float64{1, 2, 3}, a.Values())
	assert.Equal(t, []float64{0, 0, 0}, a.Grads(), "CopyFrom copies values only")
	require.Error(t, a.CopyFrom(rl.NewParams(2)))

	dst, src := rl.NewParams(2), rl.NewParams(2)
	copy(dst.Values(), []float64{0, 4})
	copy(src.Values(), []float64{1, 0})
	require.NoError(t, rl.Polyak(dst, src, 0.25))
	assert.InDeltaSlice(t, []float64{0.25, 3}, dst.Values(), 1e-15)
	require.NoError(t, rl.Polyak(dst, src, 1))
	assert.Equal(t, src.Values(), dst.Values())
	require.Error(t, rl.Polyak(dst, src, 1.5))
	require.Error(t, rl.Polyak(dst, src, math.NaN()))
	require.Error(t, rl.Polyak(dst, rl.NewParams(3), 0.1))

	tests := []struct {
		max, wantNorm float64
		want          []float64
	}{
		{1, 5, []float64{0.6, 0.8}},
		{10, 5, []float64{3, 4}},
		{0, 5, []float64{3, 4}},
	}
	for _, tc := range tests {
		p := rl.NewParams(2)
		copy(p.Grads(), []float64{3, 4})
		assert.InDelta(t, tc.wantNorm, rl.ClipGradNorm(p, tc.max), 1e-15)
		assert.InDeltaSlice(t, tc.want, p.Grads(), 1e-15)
	}
	p := rl.NewParams(2)
	copy(p.Grads(), []float64{3, 4})
	p.ZeroGrad()
	assert.Equal(t, []float64{0, 0}, p.Grads())
}

func TestAdamFirstStepsByHand(t *testing.T) {
	p := rl.NewParams(1)
	p.Values()[0] = 1
	o := rl.NewAdam(0.1)
	// Step 1, g = 2: m = 0.2, v = 0.004, m̂ = 2, v̂ = 4.
	p.Grads()[0] = 2
	o.Step(p)
	assert.InDelta(t, 1-0.1*2/(2+1e-8), p.Values()[0], 1e-15)
	// Step 2, g = −1: m = 0.18 − 0.1 = 0.08, v = 0.003996 + 0.001 = 0.004996.
	p.Grads()[0] = -1
	before := p.Values()[0]
	o.Step(p)
	mhat := 0.08 / (1 - 0.81)
	vhat := 0.004996 / (1 - 0.999*0.999)
	assert.InDelta(t, before-0.1*mhat/(math.Sqrt(vhat)+1e-8), p.Values()[0], 1e-12)
	assert.Equal(t, 2, o.Steps())
	assert.Panics(t, func() { o.Step(rl.NewParams(2)) })
}

func TestSGDByHand(t *testing.T) {
	p := rl.NewParams(1)
	o := rl.NewSGD(0.1, 0.9)
	p.Grads()[0] = 1
	o.Step(p) // v = 1
	assert.InDelta(t, -0.1, p.Values()[0], 1e-15)
	o.Step(p) // v = 1.9
	assert.InDelta(t, -0.29, p.Values()[0], 1e-15)

	q := rl.NewParams(1)
	plain := rl.NewSGD(0.5, 0)
	q.Grads()[0] = 2
	plain.Step(q)
	assert.Equal(t, -1.0, q.Values()[0])
}

// quadLoss is Σ aᵢ(θᵢ − tᵢ)²; it writes the gradient into p.
func quadLoss(p *rl.Params, a, target []float64) float64 {
	var l float64
	for i, v := range p.Values() {
		d := v - target[i]
		l += a[i] * d * d
		p.Grads()[i] = 2 * a[i] * d
	}
	return l
}

func TestOptimisersReduceQuadratic(t *testing.T) {
	a := []float64{1, 10, 0.1}
	target := []float64{3, -2, 0.5}
	tests := []struct {
		name string
		opt  rl.Optimizer
		n    int
	}{
		{"adam", rl.NewAdam(0.05), 3000},
		{"sgd", rl.NewSGD(0.04, 0), 3000},
		{"momentum", rl.NewSGD(0.01, 0.9), 3000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := rl.NewParams(3)
			start := quadLoss(p, a, target)
			for range tc.n {
				quadLoss(p, a, target)
				tc.opt.Step(p)
			}
			end := quadLoss(p, a, target)
			assert.Less(t, end, 1e-6*start, "loss %v → %v", start, end)
		})
	}
}

func TestRunningNormMatchesBatchStats(t *testing.T) {
	rnd := rand.New(rand.NewPCG(2, 3))
	const n, d = 101, 3
	x := make([]float64, n*d)
	for i := range x {
		x[i] = 5 + 3*rnd.NormFloat64()*float64(i%d+1)
	}
	mean, variance := make([]float64, d), make([]float64, d)
	for j := 0; j < d; j++ {
		for k := 0; k < n; k++ {
			mean[j] += x[k*d+j]
		}
		mean[j] /= n
		for k := 0; k < n; k++ {
			e := x[k*d+j] - mean[j]
			variance[j] += e * e
		}
		variance[j] /= n
	}

	// Single samples, uneven chunks, and a merge of two halves.
	single := rl.NewRunningNorm(d, 0)
	for k := 0; k < n; k++ {
		single.Update(x[k*d : (k+1)*d])
	}
	chunked := rl.NewRunningNorm(d, 0)
	chunked.UpdateBatch(x[:7*d], 7)
	chunked.UpdateBatch(x[7*d:50*d], 43)
	chunked.UpdateBatch(x[50*d:], n-50)
	left, right := rl.NewRunningNorm(d, 0), rl.NewRunningNorm(d, 0)
	left.UpdateBatch(x[:30*d], 30)
	right.UpdateBatch(x[30*d:], n-30)
	require.NoError(t, left.Merge(right))
	require.NoError(t, left.Merge(rl.NewRunningNorm(d, 0)))
	require.Error(t, left.Merge(rl.NewRunningNorm(d+1, 0)))

	for name, r := range map[string]*rl.RunningNorm{"single": single, "chunked": chunked, "merged": left} {
		assert.Equal(t, float64(n), r.Count(), name)
		assert.InDeltaSlice(t, mean, r.Mean(), 1e-12, name)
		assert.InDeltaSlice(t, variance, r.Var(make([]float64, d)), 1e-10, name)
	}

	z := make([]float64, len(x))
	chunked.Normalize(z, x)
	check := rl.NewRunningNorm(d, 0)
	check.UpdateBatch(z, n)
	assert.InDeltaSlice(t, []float64{0, 0, 0}, check.Mean(), 1e-12)
	assert.InDeltaSlice(t, []float64{1, 1, 1}, check.Var(make([]float64, d)), 1e-6)

	chunked.Clip = 0.5
	chunked.Normalize(z, x)
	for _, v := range z {
		require.LessOrEqual(t, math.Abs(v), 0.5)
	}

	fresh := rl.NewRunningNorm(2, 0)
	out := make([]float64, 2)
	fresh.Normalize(out, []float64{3, -4})
	assert.InDeltaSlice(t, []float64{3, -4}, out, 1e-12, "identity before any sample")
	assert.Panics(t, func() { fresh.Normalize(out, []float64{1, 2, 3}) })
}
