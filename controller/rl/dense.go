package rl

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Dense is a fully connected layer y = act(x·W + b) on a batch of row
// vectors. W is stored row-major as In×Out and b has Out entries; both are
// views into a Params.
type Dense struct {
	in, out int
	act     Activation
	params  *Params
	w, b    []float64 // views into params.values
	off     int       // offset of w in params (b follows it)

	batch int       // batch size of the last forward pass, 0 before any
	x     []float64 // input of the last forward pass (batch×in)
	xbuf  []float64 // copy of the input when called through Dense.Forward
	y     []float64 // output workspace (batch×out)
	dz    []float64 // pre-activation gradient workspace (batch×out), from the first backward pass
}

// NewDense returns a layer with its own Params, weights drawn by the default
// initialiser for act (He uniform for ReLU, Glorot uniform otherwise) from rnd,
// and zero biases.
func NewDense(in, out int, act Activation, rnd *rand.Rand) (*Dense, error) {
	if err := checkLayer(in, out, act); err != nil {
		return nil, fmt.Errorf("rl: NewDense: %w", err)
	}
	p := NewParams(in*out + out)
	d := newDenseAt(in, out, act, p, 0)
	d.initDefault(rnd)
	return d, nil
}

func checkLayer(in, out int, act Activation) error {
	if in <= 0 || out <= 0 {
		return fmt.Errorf("layer size %d→%d must be positive", in, out)
	}
	if !act.valid() {
		return fmt.Errorf("unknown activation %v", act)
	}
	return nil
}

// newDenseAt builds a layer whose parameters start at offset off in p.
func newDenseAt(in, out int, act Activation, p *Params, off int) *Dense {
	nw := in * out
	return &Dense{
		in: in, out: out, act: act, params: p, off: off,
		w: p.values[off : off+nw : off+nw],
		b: p.values[off+nw : off+nw+out : off+nw+out],
	}
}

// grads returns the gradient views of W and b (allocated again if the
// Params released them).
func (d *Dense) grads() (gw, gb []float64) {
	g, nw := d.params.Grads(), d.in*d.out
	return g[d.off : d.off+nw : d.off+nw], g[d.off+nw : d.off+nw+d.out : d.off+nw+d.out]
}

// initDefault draws He uniform weights for ReLU and Glorot uniform otherwise;
// biases are zero.
func (d *Dense) initDefault(rnd *rand.Rand) {
	var limit float64
	if d.act == ReLU {
		limit = math.Sqrt(6 / float64(d.in))
	} else {
		limit = math.Sqrt(6 / float64(d.in+d.out))
	}
	uniform(d.w, limit, rnd)
	clear(d.b)
}

// uniform fills dst with draws from U(−limit, limit).
func uniform(dst []float64, limit float64, rnd *rand.Rand) {
	for i := range dst {
		dst[i] = (2*rnd.Float64() - 1) * limit
	}
}

// In returns the input width.
func (d *Dense) In() int { return d.in }

// Out returns the output width.
func (d *Dense) Out() int { return d.out }

// Activation returns the layer's activation.
func (d *Dense) Activation() Activation { return d.act }

// Params returns the storage that holds the layer's parameters (shared with
// the enclosing MLP when the layer belongs to one).
func (d *Dense) Params() *Params { return d.params }

// Weights returns the In×Out row-major weight view.
func (d *Dense) Weights() []float64 { return d.w }

// Bias returns the bias view.
func (d *Dense) Bias() []float64 { return d.b }

// Release returns the layer's batch workspaces, sized by the largest batch
// seen, to the process's scratch pools; the next forward pass borrows them
// again. Backward needs a Forward after it.
func (d *Dense) Release() {
	for _, s := range [][]float64{d.xbuf, d.y, d.dz} {
		giveBack(s)
	}
	d.batch, d.x, d.xbuf, d.y, d.dz = 0, nil, nil, nil, nil
}

// grow returns s with length n, borrowing a larger buffer (and giving s
// back) only when n exceeds its capacity.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		giveBack(s)
		s = borrow(n)
	}
	return s[:n]
}

// reserve sizes the output workspace for batch rows, borrowing only when
// the batch exceeds every batch seen since the last Release.
func (d *Dense) reserve(batch int) { d.y = grow(d.y, batch*d.out) }

// forward computes the layer on x (batch×in), keeps a reference to x for the
// backward pass and returns the internal output buffer.
func (d *Dense) forward(x []float64, batch int) []float64 {
	d.reserve(batch)
	d.batch, d.x = batch, x
	y := d.y
	if d.out <= kernelMaxOut {
		gemmNN(batch, d.out, d.in, x, d.w, y, d.b, d.act == ReLU)
		if d.act == Tanh {
			d.act.apply(y)
		}
		return y
	}
	for r := 0; r < batch; r++ {
		copy(y[r*d.out:(r+1)*d.out], d.b)
	}
	gemm(nil, false, false, batch, d.out, d.in, x, d.in, d.w, d.out, 1, y, d.out)
	d.act.apply(y)
	return y
}

// backward accumulates parameter gradients from dy (batch×out) and, when dx is
// not nil, writes the input gradient into dx (batch×in).
func (d *Dense) backward(dx, dy []float64, batch int, params bool) {
	d.dz = grow(d.dz, len(d.y))
	dz := d.dz
	d.act.backward(dz, dy[:len(dz)], d.y)
	if !params {
		if dx == nil {
			return
		}
		if d.out <= kernelMaxOut {
			gemmNT(batch, d.in, d.out, dz, d.w, dx)
		} else {
			gemm(nil, false, true, batch, d.in, d.out, dz, d.out, d.w, d.out, 0, dx, d.in)
		}
		return
	}
	gw, gb := d.grads()
	for r := 0; r < batch; r++ {
		row := dz[r*d.out : (r+1)*d.out]
		for j, v := range row {
			gb[j] += v
		}
	}
	if d.out <= kernelMaxOut {
		gemmTN(d.in, d.out, batch, d.x, dz, gw)
		if dx != nil {
			gemmNT(batch, d.in, d.out, dz, d.w, dx)
		}
		return
	}
	gemm(nil, true, false, d.in, d.out, batch, d.x, d.in, dz, d.out, 1, gw, d.out)
	if dx != nil {
		gemm(nil, false, true, batch, d.in, d.out, dz, d.out, d.w, d.out, 0, dx, d.in)
	}
}

// Forward writes act(x·W + b) into dst (batch×Out) for x (batch×In, one sample
// per row). The input is copied, so x may change before Backward.
func (d *Dense) Forward(dst, x []float64, batch int) {
	checkBatch("Dense.Forward", batch, len(x), d.in, len(dst), d.out)
	d.xbuf = grow(d.xbuf, len(x))
	copy(d.xbuf, x)
	copy(dst, d.forward(d.xbuf, batch))
}

// Backward adds the parameter gradients of the last Forward, given the output
// gradient dy (batch×Out), to the layer's Params gradients and writes the input
// gradient into dx (batch×In) unless dx is nil. batch must equal the last
// Forward's.
func (d *Dense) Backward(dx, dy []float64, batch int) {
	if batch != d.batch || batch == 0 {
		panic(fmt.Sprintf("rl: Dense.Backward: batch %d does not match last Forward batch %d", batch, d.batch))
	}
	checkBatch("Dense.Backward", batch, len(dy), d.out, -1, 0)
	if dx != nil && len(dx) != batch*d.in {
		panic(fmt.Sprintf("rl: Dense.Backward: dx has length %d, want %d×%d", len(dx), batch, d.in))
	}
	d.backward(dx, dy, batch, true)
}

// checkBatch panics when a batch buffer has the wrong length; a negative
// ndst skips the destination check.
func checkBatch(where string, batch, nx, in, ndst, out int) {
	if batch <= 0 {
		panic(fmt.Sprintf("rl: %s: batch %d must be positive", where, batch))
	}
	if nx != batch*in {
		panic(fmt.Sprintf("rl: %s: input has length %d, want %d×%d", where, nx, batch, in))
	}
	if ndst >= 0 && ndst != batch*out {
		panic(fmt.Sprintf("rl: %s: destination has length %d, want %d×%d", where, ndst, batch, out))
	}
}
