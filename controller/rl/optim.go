package rl

import (
	"fmt"
	"math"
)

// Optimizer updates parameter values from their accumulated gradients. It does
// not zero the gradients. An optimiser keeps per-parameter state and must be
// used with one Params (or Params of one length) only.
type Optimizer interface {
	Step(p *Params)
}

// SGD is stochastic gradient descent with optional classical momentum:
// v ← μ·v + g; θ ← θ − lr·v.
type SGD struct {
	LR       float64
	Momentum float64
	vel      []float64
}

// NewSGD returns an SGD optimiser; momentum 0 disables the velocity.
func NewSGD(lr, momentum float64) *SGD { return &SGD{LR: lr, Momentum: momentum} }

// Step applies one update to p.
func (o *SGD) Step(p *Params) {
	if o.Momentum == 0 {
		for i, g := range p.Grads() {
			p.values[i] -= o.LR * g
		}
		return
	}
	o.vel = state(o.vel, p.Len(), "SGD")
	for i, g := range p.Grads() {
		v := o.Momentum*o.vel[i] + g
		o.vel[i] = v
		p.values[i] -= o.LR * v
	}
}

// Adam is the Adam optimiser (Kingma & Ba) with bias correction.
type Adam struct {
	LR, Beta1, Beta2, Eps float64
	m, v                  []float64
	// m32 and v32 hold the moments at float32 precision while compacted
	// (m and v nil); they stay allocated for the next Compact.
	m32, v32 []float32
	t        int
}

// compacted reports whether the moments are held in m32 and v32 alone.
func (o *Adam) compacted() bool { return o.m == nil && o.m32 != nil }

// Compact keeps the moment estimates at float32 precision until the next
// Step, which widens them again, and returns their float64 storage to the
// process's scratch pools: an idle optimiser holds half the memory, for a
// process that keeps many networks and trains few at a time (the agent
// runner compacts an agent's optimisers after each training turn).
// Rounding the moments to float32 changes an update by a relative 6e-8
// at most, far below the noise of the minibatch gradients they average;
// training without Compact is unchanged.
func (o *Adam) Compact() {
	if o.m == nil {
		return
	}
	o.m32, o.v32 = narrow(o.m32, o.m), narrow(o.v32, o.v)
	giveBack(o.m)
	giveBack(o.v)
	o.m, o.v = nil, nil
}

// widen restores the float64 moments of a compacted optimiser.
func (o *Adam) widen() {
	if o.compacted() {
		o.m, o.v = widened(borrow(len(o.m32)), o.m32), widened(borrow(len(o.v32)), o.v32)
	}
}

// moments returns the first and second moments as float64 (copies when
// compacted); nil before the first Step.
func (o *Adam) moments() (m, v []float64) {
	if !o.compacted() {
		return o.m, o.v
	}
	return widened(make([]float64, len(o.m32)), o.m32), widened(make([]float64, len(o.v32)), o.v32)
}

// widened writes src into dst (of its length) and returns dst.
func widened(dst []float64, src []float32) []float64 {
	for i, x := range src {
		dst[i] = float64(x)
	}
	return dst
}

// narrow writes src rounded to float32 into dst, reusing its storage.
func narrow(dst []float32, src []float64) []float32 {
	if cap(dst) < len(src) {
		dst = make([]float32, len(src))
	}
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = float32(x)
	}
	return dst
}

// NewAdam returns Adam with β1 0.9, β2 0.999 and ε 1e-8.
func NewAdam(lr float64) *Adam {
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// Steps returns how many updates have been applied.
func (o *Adam) Steps() int { return o.t }

// Step applies one update to p:
// m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g², θ ← θ − lr·m̂/(√v̂ + ε)
// with m̂ = m/(1−β1ᵗ) and v̂ = v/(1−β2ᵗ).
func (o *Adam) Step(p *Params) {
	o.widen()
	o.m = state(o.m, p.Len(), "Adam")
	o.v = state(o.v, p.Len(), "Adam")
	o.t++
	c1 := 1 - math.Pow(o.Beta1, float64(o.t))
	c2 := 1 - math.Pow(o.Beta2, float64(o.t))
	// lr·m̂/(√v̂+ε) = a·m/(√v+ε̂) with a = lr·√c2/c1 and ε̂ = ε·√c2.
	sc2 := math.Sqrt(c2)
	a, eps := o.LR*sc2/c1, o.Eps*sc2
	b1, b2 := o.Beta1, o.Beta2
	m, v := o.m, o.v[:len(o.m)]
	vals := p.values[:len(m)]
	for i, g := range p.Grads()[:len(m)] {
		mi := b1*m[i] + (1-b1)*g
		vi := b2*v[i] + (1-b2)*g*g
		m[i], v[i] = mi, vi
		vals[i] -= a * mi / (math.Sqrt(vi) + eps)
	}
}

// state returns s sized to n, allocating on first use and panicking when the
// optimiser is reused with a different parameter count.
func state(s []float64, n int, who string) []float64 {
	if s == nil {
		return borrowZeroed(n)
	}
	if len(s) != n {
		panic(fmt.Sprintf("rl: %s.Step: optimiser state has %d entries but Params has %d", who, len(s), n))
	}
	return s
}
