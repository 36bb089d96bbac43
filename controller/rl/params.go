package rl

import (
	"fmt"
	"math"
)

// Params holds every parameter of a network and the matching gradients in two
// contiguous slices of equal length. Layers hold views (sub-slices) into the
// values and offsets into the gradients, which ReleaseGrads may drop between
// training turns.
type Params struct {
	values []float64
	grads  []float64
}

// NewParams returns zeroed storage for n parameters.
func NewParams(n int) *Params {
	if n < 0 {
		panic(fmt.Sprintf("rl: NewParams: negative length %d", n))
	}
	return &Params{values: make([]float64, n)}
}

// Len returns the number of parameters.
func (p *Params) Len() int { return len(p.values) }

// Values returns the parameter values; writes through it change the network.
func (p *Params) Values() []float64 { return p.values }

// Grads returns the accumulated gradients, aligned with Values. They are
// allocated, zeroed, on first use (a target network never has any) and
// again after ReleaseGrads.
func (p *Params) Grads() []float64 {
	if p.grads == nil {
		p.grads = borrowZeroed(len(p.values))
	}
	return p.grads
}

// ReleaseGrads drops the gradient storage (as large as the values) for a
// process that keeps many networks and trains few at a time; the next
// backward pass or Grads allocates it again, zeroed. Gradients accumulated
// and not yet applied are lost, so call it between updates only.
func (p *Params) ReleaseGrads() {
	giveBack(p.grads)
	p.grads = nil
}

// ZeroGrad sets every gradient to zero.
func (p *Params) ZeroGrad() { clear(p.grads) }

// CopyFrom copies src's values (not gradients) into p.
func (p *Params) CopyFrom(src *Params) error {
	if len(src.values) != len(p.values) {
		return fmt.Errorf("rl: Params.CopyFrom: length mismatch: dst %d, src %d", len(p.values), len(src.values))
	}
	copy(p.values, src.values)
	return nil
}

// GradNorm returns the Euclidean norm of the gradients.
func (p *Params) GradNorm() float64 {
	var s float64
	for _, g := range p.grads {
		s += g * g
	}
	return math.Sqrt(s)
}

// Polyak performs the soft target update dst ← τ·src + (1−τ)·dst on values.
// τ must lie in [0, 1].
func Polyak(dst, src *Params, tau float64) error {
	if len(dst.values) != len(src.values) {
		return fmt.Errorf("rl: Polyak: length mismatch: dst %d, src %d", len(dst.values), len(src.values))
	}
	if !(tau >= 0 && tau <= 1) {
		return fmt.Errorf("rl: Polyak: tau %v outside [0, 1]", tau)
	}
	s := src.values[:len(dst.values)]
	for i, d := range dst.values {
		dst.values[i] = d + tau*(s[i]-d)
	}
	return nil
}

// ClipGradNorm scales the gradients so that their global Euclidean norm is at
// most maxNorm and returns the norm before clipping. maxNorm ≤ 0 disables
// clipping.
func ClipGradNorm(p *Params, maxNorm float64) float64 {
	n := p.GradNorm()
	if maxNorm > 0 && n > maxNorm {
		s := maxNorm / n
		for i := range p.grads {
			p.grads[i] *= s
		}
	}
	return n
}
