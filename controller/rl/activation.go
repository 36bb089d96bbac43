package rl

import (
	"fmt"
	"math"
)

// Activation is an element-wise non-linearity applied after a dense layer.
type Activation int

// Supported activations.
const (
	Identity Activation = iota
	ReLU
	Tanh
)

// String returns the activation's name.
func (a Activation) String() string {
	switch a {
	case Identity:
		return "identity"
	case ReLU:
		return "relu"
	case Tanh:
		return "tanh"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

func (a Activation) valid() bool { return a >= Identity && a <= Tanh }

// apply replaces z with act(z) in place.
func (a Activation) apply(z []float64) {
	switch a {
	case ReLU:
		n := vectorLen(len(z))
		if n > 0 {
			reluVec(&z[0], n)
		}
		for i := n; i < len(z); i++ {
			z[i] = max(z[i], 0) // branch-free: signs of z are unpredictable
		}
	case Tanh:
		for i, v := range z {
			z[i] = math.Tanh(v)
		}
	}
}

// backward writes dz = dy ⊙ act'(z), expressed through the output y = act(z).
func (a Activation) backward(dz, dy, y []float64) {
	switch a {
	case ReLU:
		// y ≥ 0 here (or NaN), so y > 0 exactly when its bits without the
		// sign are non-zero; masking dy's bits avoids an unpredictable
		// branch. The vector path uses the same rule (y ≠ 0 or NaN).
		dy = dy[:len(y)]
		dz = dz[:len(y)]
		n := vectorLen(len(y))
		if n > 0 {
			reluBackVec(&dz[0], &dy[0], &y[0], n)
		}
		for i := n; i < len(y); i++ {
			b := math.Float64bits(y[i]) &^ (1 << 63)
			mask := -((b | -b) >> 63)
			dz[i] = math.Float64frombits(math.Float64bits(dy[i]) & mask)
		}
	case Tanh:
		for i, v := range y {
			dz[i] = dy[i] * (1 - v*v)
		}
	default:
		copy(dz, dy)
	}
}
