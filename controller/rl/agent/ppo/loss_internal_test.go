package ppo

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGAEHandComputed(t *testing.T) {
	rewards := []float64{1, 2, 3, 4}
	values := []float64{0.5, 1, 1.5, 2}
	nextValues := []float64{1, 1.5, 9, 2.5}
	done := []bool{false, false, true, false}
	tests := []struct {
		name    string
		end     []bool
		adv     []float64
		returns []float64
	}{
		// γ 0.9, λ 0.5: δ = [1 + 0.9·1 − 0.5, 2 + 0.9·1.5 − 1, 3 − 1.5 (done: no
		// bootstrap from 9), 4 + 0.9·2.5 − 2] = [1.4, 2.35, 1.5, 4.25];
		// A3 = 4.25, A2 = 1.5 (cut by done), A1 = 2.35 + 0.45·1.5, A0 = 1.4 + 0.45·A1.
		{"done cuts", nil, []float64{2.76125, 3.025, 1.5, 4.25}, []float64{3.26125, 4.025, 3, 6.25}},
		// A break after step 1 bootstraps but restarts the recursion.
		{"end cuts", []bool{false, true, false, false}, []float64{2.4575, 2.35, 1.5, 4.25}, []float64{2.9575, 3.35, 3, 6.25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adv, ret := make([]float64, 4), make([]float64, 4)
			GAE(adv, ret, rewards, values, nextValues, done, tt.end, 0.9, 0.5)
			assert.InDeltaSlice(t, tt.adv, adv, 1e-12)
			assert.InDeltaSlice(t, tt.returns, ret, 1e-12)
		})
	}
}

// numGrad returns the central finite-difference gradient of f at x.
func numGrad(f func() float64, x []float64) []float64 {
	const h = 1e-6
	g := make([]float64, len(x))
	for i := range x {
		v := x[i]
		x[i] = v + h
		fp := f()
		x[i] = v - h
		fm := f()
		x[i] = v
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

func TestCategoricalLossGradient(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	const b, n, eps, ent = 6, 4, 0.2, 0.05
	logits := make([]float64, b*n)
	for i := range logits {
		logits[i] = rnd.NormFloat64()
	}
	actions := []int{0, 1, 2, 3, 1, 2}
	adv := []float64{1, -1, 0.5, -2, 2, -0.3}
	old := make([]float64, b)
	probs, d := make([]float64, b*n), make([]float64, b*n)
	for k, a := range actions {
		logSoftmax(probs[k*n:(k+1)*n], logits[k*n:(k+1)*n])
		// Ratios e^{±0.5} and e^{±0.05}: clipped and unclipped samples.
		old[k] = probs[k*n+a] + []float64{0.5, -0.5, 0.05, -0.05, -0.5, 0.5}[k]
	}
	total := func() float64 {
		s, h, _ := categoricalLoss(make([]float64, b*n), make([]float64, b*n), logits, actions, old, adv, n, eps, ent)
		return s - ent*h
	}
	_, _, frac := categoricalLoss(d, probs, logits, actions, old, adv, n, eps, ent)
	assert.InDelta(t, 2.0/6, frac, 1e-12, "two samples are on the clipped branch")
	assert.InDeltaSlice(t, numGrad(total, logits), d, 1e-7)
}

func TestGaussianLossGradient(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	const b, a, eps, ent = 5, 3, 0.2, 0.01
	mu, u := make([]float64, b*a), make([]float64, b*a)
	for i := range mu {
		mu[i], u[i] = 0.5*rnd.NormFloat64(), rnd.NormFloat64()
	}
	logStd := []float64{-0.5, 0, 0.3}
	adv := []float64{-1, -1, 0.7, -0.2, 1.5}
	old := make([]float64, b)
	for k := range b {
		old[k] = gaussianLogp(u[k*a:(k+1)*a], mu[k*a:(k+1)*a], logStd) + []float64{0.6, 0.02, -0.6, -0.03, 0.01}[k]
	}
	total := func() float64 {
		s, h, _ := gaussianLoss(make([]float64, b*a), make([]float64, a), mu, logStd, u, old, adv, eps, ent)
		return s - ent*h
	}
	dmu, dls := make([]float64, b*a), make([]float64, a)
	_, h, frac := gaussianLoss(dmu, dls, mu, logStd, u, old, adv, eps, ent)
	require.InDelta(t, 3*(0.5+halfLog2Pi)-0.2, h, 1e-12)
	assert.InDelta(t, 2.0/5, frac, 1e-12)
	assert.InDeltaSlice(t, numGrad(total, mu), dmu, 1e-7)
	assert.InDeltaSlice(t, numGrad(total, logStd), dls, 1e-7)
}

func TestSampleCategorical(t *testing.T) {
	logits := []float64{0, 1, 2}
	rnd := rand.New(rand.NewPCG(1, 1))
	counts := make([]int, 3)
	for range 30000 {
		counts[sampleCategorical(logits, rnd.Float64())]++
	}
	// softmax(0, 1, 2) = 0.090, 0.245, 0.665.
	assert.InDelta(t, 0.090, float64(counts[0])/30000, 0.01)
	assert.InDelta(t, 0.245, float64(counts[1])/30000, 0.01)
	assert.InDelta(t, 0.665, float64(counts[2])/30000, 0.01)
}
