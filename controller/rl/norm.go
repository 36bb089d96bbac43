package rl

import (
	"fmt"
	"math"
)

// RunningNorm tracks the running mean and (population) variance of vectors
// with Welford's algorithm and Chan et al.'s parallel merge, and normalises
// inputs with them.
type RunningNorm struct {
	// Clip, when positive, bounds normalised values to [−Clip, Clip].
	Clip float64
	// Eps is added to the variance before the square root.
	Eps   float64
	count float64
	mean  []float64
	m2    []float64
}

// NewRunningNorm returns a normaliser for dim-wide vectors with Eps 1e-8.
func NewRunningNorm(dim int, clip float64) *RunningNorm {
	if dim <= 0 {
		panic(fmt.Sprintf("rl: NewRunningNorm: dim %d must be positive", dim))
	}
	return &RunningNorm{Clip: clip, Eps: 1e-8, mean: make([]float64, dim), m2: make([]float64, dim)}
}

// Dim returns the vector width.
func (r *RunningNorm) Dim() int { return len(r.mean) }

// Count returns the number of samples seen.
func (r *RunningNorm) Count() float64 { return r.count }

// Mean returns the running mean (a view; do not modify).
func (r *RunningNorm) Mean() []float64 { return r.mean }

// Var writes the population variance into dst (len Dim) and returns it; it
// is zero before two samples have been seen.
func (r *RunningNorm) Var(dst []float64) []float64 {
	for i, m2 := range r.m2 {
		if r.count > 0 {
			dst[i] = m2 / r.count
		} else {
			dst[i] = 0
		}
	}
	return dst
}

// Update adds one sample.
func (r *RunningNorm) Update(x []float64) { r.UpdateBatch(x, 1) }

// UpdateBatch adds batch samples stored row-major in x (batch×Dim): the batch
// statistics are computed exactly and merged with the running ones.
func (r *RunningNorm) UpdateBatch(x []float64, batch int) {
	d := len(r.mean)
	checkBatch("RunningNorm.UpdateBatch", batch, len(x), d, -1, 0)
	nb := float64(batch)
	for j := 0; j < d; j++ {
		var mb float64
		for k := 0; k < batch; k++ {
			mb += x[k*d+j]
		}
		mb /= nb
		var m2b float64
		for k := 0; k < batch; k++ {
			e := x[k*d+j] - mb
			m2b += e * e
		}
		r.mergeDim(j, nb, mb, m2b)
	}
	r.count += nb
}

// mergeDim merges (n, mean, m2) for dimension j into r; r.count is updated by
// the caller.
func (r *RunningNorm) mergeDim(j int, nb, mb, m2b float64) {
	na := r.count
	n := na + nb
	delta := mb - r.mean[j]
	r.mean[j] += delta * nb / n
	r.m2[j] += m2b + delta*delta*na*nb/n
}

// Merge adds o's statistics to r. Both must have the same Dim.
func (r *RunningNorm) Merge(o *RunningNorm) error {
	if len(o.mean) != len(r.mean) {
		return fmt.Errorf("rl: RunningNorm.Merge: dim mismatch: %d and %d", len(r.mean), len(o.mean))
	}
	if o.count == 0 {
		return nil
	}
	for j := range r.mean {
		r.mergeDim(j, o.count, o.mean[j], o.m2[j])
	}
	r.count += o.count
	return nil
}

// Normalize writes (x − mean)/√(var + Eps), clipped to ±Clip when Clip > 0,
// into dst; before any Update it copies x (clipped). x may hold several samples row-major; dst and x may alias.
func (r *RunningNorm) Normalize(dst, x []float64) {
	d := len(r.mean)
	if len(x)%d != 0 || len(dst) != len(x) {
		panic(fmt.Sprintf("rl: RunningNorm.Normalize: lengths dst %d, x %d, want equal multiples of %d", len(dst), len(x), d))
	}
	for i, v := range x {
		j := i % d
		vr := 1 - r.Eps // before any sample: identity
		if r.count > 0 {
			vr = r.m2[j] / r.count
		}
		z := (v - r.mean[j]) / math.Sqrt(vr+r.Eps)
		if r.Clip > 0 {
			z = max(-r.Clip, min(r.Clip, z))
		}
		dst[i] = z
	}
}
