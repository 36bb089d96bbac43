package rl

import (
	"fmt"
	"math/rand/v2"
)

// Dropout is inverted dropout: in training mode each element is zeroed with
// probability P and the survivors are scaled by 1/(1−P), so the expected
// output equals the input; in evaluation mode it is the identity. Backward
// applies the mask drawn by the last Forward. It has no parameters and is not
// safe for concurrent use.
type Dropout struct {
	p     float64
	rnd   *rand.Rand
	train bool

	mask  []float64 // 0 or 1/(1−p) per element of the last training Forward
	n     int       // length of the last Forward, -1 before any
	wasOn bool      // whether the last Forward was in training mode
}

// NewDropout returns a dropout layer in training mode that drops with
// probability p ∈ [0, 1), drawing its masks from rnd.
func NewDropout(p float64, rnd *rand.Rand) (*Dropout, error) {
	if rnd == nil {
		return nil, fmt.Errorf("rl: NewDropout: nil random source")
	}
	if !(p >= 0 && p < 1) {
		return nil, fmt.Errorf("rl: NewDropout: probability %v outside [0, 1)", p)
	}
	return &Dropout{p: p, rnd: rnd, train: true, n: -1}, nil
}

// P returns the drop probability.
func (d *Dropout) P() float64 { return d.p }

// SetTraining switches between training (random masks) and evaluation
// (identity) mode.
func (d *Dropout) SetTraining(on bool) { d.train = on }

// Training reports whether the layer is in training mode.
func (d *Dropout) Training() bool { return d.train }

// Forward writes the dropped-out x into dst (same length). It allocates only
// when x is longer than every earlier input.
func (d *Dropout) Forward(dst, x []float64) {
	if len(dst) != len(x) {
		panic(fmt.Sprintf("rl: Dropout.Forward: destination has length %d, input %d", len(dst), len(x)))
	}
	d.n, d.wasOn = len(x), d.train
	if !d.train || d.p == 0 {
		d.wasOn = false
		copy(dst, x)
		return
	}
	d.mask = growBuf(d.mask, len(x))
	scale := 1 / (1 - d.p)
	for i, v := range x {
		m := 0.0
		if d.rnd.Float64() >= d.p {
			m = scale
		}
		d.mask[i] = m
		dst[i] = v * m
	}
}

// Backward writes into dx the gradient dy (same length as the last Forward's
// input) masked and scaled exactly as the last Forward.
func (d *Dropout) Backward(dx, dy []float64) {
	if d.n < 0 {
		panic("rl: Dropout.Backward: no Forward yet")
	}
	if len(dy) != d.n || len(dx) != d.n {
		panic(fmt.Sprintf("rl: Dropout.Backward: dx has length %d and dy %d, want %d", len(dx), len(dy), d.n))
	}
	if !d.wasOn {
		copy(dx, dy)
		return
	}
	for i, g := range dy {
		dx[i] = g * d.mask[i]
	}
}
