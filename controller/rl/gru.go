package rl

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GRU is a gated recurrent unit layer run over the time axis of a batch of
// equal-length sequences. Inputs are row-major B×T×In (x[b][t][f]) and outputs
// hold every hidden state, B×T×Hidden. With the gates in PyTorch's order
// r, z, n and h₀ zero unless given:
//
//	r = σ(x·Wxr + bxr + h·Whr + bhr)
//	z = σ(x·Wxz + bxz + h·Whz + bhz)
//	n = tanh(x·Wxn + bxn + r ⊙ (h·Whn + bhn))
//	h' = (1−z) ⊙ n + z ⊙ h
//
// Wx is In×3H and Wh is H×3H (row-major, gate blocks side by side), bx and bh
// have 3H entries; all are views into one Params. The input projections of all
// time steps are one matrix product; only the recurrent product runs per step.
// A GRU is not safe for concurrent use.
type GRU struct {
	in, hidden int
	reverse    bool // process time steps from last to first
	params     *Params

	wx, wh, bx, bh []float64 // views into params.values
	off            int       // offset of wx in params (wh, bx, bh follow it)

	batch, steps int       // shape of the last forward pass, 0 before any
	x            []float64 // input of the last forward pass (B×T×in)
	xbuf         []float64 // copy of the input when called through GRU.Forward
	h0           []float64 // initial state (B×H)
	act          []float64 // B×T×3H: input projections x·Wx, then r, z, n
	gh           []float64 // B×T×3H: recurrent projections h·Wh, bhn added to the n block
	hp           []float64 // B×T×H: hidden state before each step
	hs           []float64 // B×T×H: hidden state after each step
	dgx, dgh     []float64 // B×T×3H: gradients of the gate pre-activations
	dh           []float64 // B×H: gradient flowing to the previous state
	work         gemmWork  // packing buffers of the matrix products
	whp          packedB   // Wh (forward) or Whᵀ (backward), packed once per pass
	brz          []float64 // 2H: bx + bh of the r and z gates
}

// NewGRU returns a GRU with its own Params and every weight and bias drawn
// from U(−1/√hidden, 1/√hidden) (PyTorch's initialisation) using rnd.
func NewGRU(in, hidden int, rnd *rand.Rand) (*GRU, error) {
	if rnd == nil {
		return nil, fmt.Errorf("rl: NewGRU: nil random source")
	}
	if in <= 0 || hidden <= 0 {
		return nil, fmt.Errorf("rl: NewGRU: sizes in %d, hidden %d must be positive", in, hidden)
	}
	g := newGRUAt(in, hidden, false, NewParams(gruParamLen(in, hidden)), 0)
	g.initDefault(rnd)
	return g, nil
}

// gruParamLen is the number of parameters of a GRU layer.
func gruParamLen(in, hidden int) int { return 3 * hidden * (in + hidden + 2) }

// newGRUAt builds a GRU whose parameters start at offset off in p, laid out
// as Wx, Wh, bx, bh.
func newGRUAt(in, hidden int, reverse bool, p *Params, off int) *GRU {
	g3 := 3 * hidden
	view := func(s []float64, from, n int) []float64 { return s[from : from+n : from+n] }
	oWh := off + in*g3
	oBx := oWh + hidden*g3
	oBh := oBx + g3
	return &GRU{
		in: in, hidden: hidden, reverse: reverse, params: p, off: off,
		wx: view(p.values, off, in*g3), wh: view(p.values, oWh, hidden*g3),
		bx: view(p.values, oBx, g3), bh: view(p.values, oBh, g3),
	}
}

// grads returns the gradient views of Wx, Wh, bx and bh (allocated again if
// the Params released them), laid out as the values.
func (g *GRU) grads() (gwx, gwh, gbx, gbh []float64) {
	gs, g3 := g.params.Grads(), 3*g.hidden
	at := func(from, n int) []float64 { return gs[from : from+n : from+n] }
	oWh := g.off + g.in*g3
	oBx := oWh + g.hidden*g3
	return at(g.off, g.in*g3), at(oWh, g.hidden*g3), at(oBx, g3), at(oBx+g3, g3)
}

func (g *GRU) initDefault(rnd *rand.Rand) {
	limit := 1 / math.Sqrt(float64(g.hidden))
	for _, s := range [][]float64{g.wx, g.wh, g.bx, g.bh} {
		uniform(s, limit, rnd)
	}
}

// In returns the input feature width.
func (g *GRU) In() int { return g.in }

// Hidden returns the hidden state width.
func (g *GRU) Hidden() int { return g.hidden }

// Params returns the storage holding the layer's parameters (shared with the
// enclosing BiGRU when the layer belongs to one).
func (g *GRU) Params() *Params { return g.params }

// InputWeights returns the In×3H row-major view Wx (gate blocks r, z, n).
func (g *GRU) InputWeights() []float64 { return g.wx }

// RecurrentWeights returns the H×3H row-major view Wh (gate blocks r, z, n).
func (g *GRU) RecurrentWeights() []float64 { return g.wh }

// InputBias returns the 3H view bx.
func (g *GRU) InputBias() []float64 { return g.bx }

// RecurrentBias returns the 3H view bh.
func (g *GRU) RecurrentBias() []float64 { return g.bh }

// growBuf returns s resized to n, reallocating only when its capacity is short.
func growBuf(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// reserve sizes the workspaces for batch×steps, allocating only when the
// product exceeds every one seen before.
func (g *GRU) reserve(batch, steps int) {
	n, h3 := batch*steps*g.hidden, 3*batch*steps*g.hidden
	g.h0 = growBuf(g.h0, batch*g.hidden)
	g.dh = growBuf(g.dh, batch*g.hidden)
	g.act, g.gh = growBuf(g.act, h3), growBuf(g.gh, h3)
	g.dgx, g.dgh = growBuf(g.dgx, h3), growBuf(g.dgh, h3)
	g.hp, g.hs = growBuf(g.hp, n), growBuf(g.hs, n)
}

// stepAt returns the time index processed at step s.
func (g *GRU) stepAt(s, steps int) int {
	if g.reverse {
		return steps - 1 - s
	}
	return s
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// sigmoids sets x[i] = σ(x[i]), eight at a time with AVX-512.
func sigmoids(x []float64) {
	n := vectorLen(len(x))
	if n > 0 {
		sigmoidVec(&x[0], n)
	}
	for i := n; i < len(x); i++ {
		x[i] = sigmoid(x[i])
	}
}

// tanhs sets x[i] = tanh(x[i]) as 1 − 2/(1 + e^{2x}), eight at a time with
// AVX-512: one exponential, with an absolute error of a few ulps of 1 (the
// gates use tanh's value, never its relative accuracy near zero).
func tanhs(x []float64) {
	n := vectorLen(len(x))
	if n > 0 {
		tanhVec(&x[0], n)
	}
	for i := n; i < len(x); i++ {
		x[i] = 1 - 2/(1+math.Exp(2*x[i]))
	}
}

// forward runs the layer on x (B×T×in), keeping a reference to x, starting
// from h0 (B×H, nil for zeros), and returns the internal B×T×H state buffer.
func (g *GRU) forward(x, h0 []float64, batch, steps int) []float64 {
	g.reserve(batch, steps)
	g.batch, g.steps, g.x = batch, steps, x
	H, G, bt := g.hidden, 3*g.hidden, batch*steps
	if h0 == nil {
		clear(g.h0)
	} else {
		copy(g.h0, h0)
	}
	gemm(&g.work, false, false, bt, G, g.in, x, g.in, g.wx, G, 0, g.act, G)
	g.whp.pack(false, H, G, g.wh, G)
	bxn, bhn := g.bx[2*H:], g.bh[2*H:]
	g.brz = growBuf(g.brz, 2*H)
	brz := g.brz // bxr + bhr, bxz + bhz
	for j := range brz {
		brz[j] = g.bx[j] + g.bh[j]
	}
	for s := 0; s < steps; s++ {
		t := g.stepAt(s, steps)
		prev, ldp := g.h0, H
		if s > 0 {
			prev, ldp = g.hs[g.stepAt(s-1, steps)*H:], steps*H
		}
		gemmB(&g.work, false, batch, prev, ldp, &g.whp, 0, g.gh[t*G:], steps*G)
		for b := 0; b < batch; b++ {
			o := b*steps + t
			a := g.act[o*G : o*G+G]
			ar, az, an := a[:H], a[H:2*H], a[2*H:]
			c := g.gh[o*G : o*G+G]
			cn := c[2*H:]
			hp := g.hp[o*H : o*H+H]
			copy(hp, prev[b*ldp:b*ldp+H])
			h := g.hs[o*H : o*H+H]
			rz, crz := a[:2*H], c[:2*H:2*H]
			for j, b := range brz { // r and z pre-activations
				rz[j] += b + crz[j]
			}
			sigmoids(rz)
			for j, r := range ar {
				hn := cn[j] + bhn[j]
				cn[j] = hn
				an[j] += bxn[j] + r*hn
			}
			tanhs(an)
			for j, hv := range hp {
				z, n := az[j], an[j]
				h[j] = (1-z)*n + z*hv
			}
		}
	}
	return g.hs
}

// backward back-propagates dy (B×T×H) through time, adds the parameter
// gradients to Params, writes the input gradient into dx unless it is nil
// and writes the initial-state gradient into dh0 unless it is nil.
func (g *GRU) backward(dx, dh0, dy []float64) {
	batch, steps, H, G := g.batch, g.steps, g.hidden, 3*g.hidden
	bt := batch * steps
	clear(g.dh)
	g.whp.pack(true, G, H, g.wh, G)
	for s := steps - 1; s >= 0; s-- {
		t := g.stepAt(s, steps)
		for b := 0; b < batch; b++ {
			o := b*steps + t
			a := g.act[o*G : o*G+G]
			ar, az, an := a[:H], a[H:2*H], a[2*H:]
			cn := g.gh[o*G+2*H : o*G+G]
			hp := g.hp[o*H : o*H+H]
			d := dy[o*H : o*H+H]
			dn := g.dh[b*H : b*H+H]
			dgx := g.dgx[o*G : o*G+G]
			dxr, dxz, dxn := dgx[:H], dgx[H:2*H], dgx[2*H:]
			dgh := g.dgh[o*G : o*G+G]
			dhr, dhz, dhn := dgh[:H], dgh[H:2*H], dgh[2*H:]
			for j, hv := range hp {
				dh := d[j] + dn[j]
				r, z, n := ar[j], az[j], an[j]
				dan := dh * (1 - z) * (1 - n*n)
				daz := dh * (hv - n) * z * (1 - z)
				dar := dan * cn[j] * r * (1 - r)
				dxr[j], dxz[j], dxn[j] = dar, daz, dan
				dhr[j], dhz[j], dhn[j] = dar, daz, dan*r
				dn[j] = dh * z
			}
		}
		gemmB(&g.work, false, batch, g.dgh[t*G:], steps*G, &g.whp, 1, g.dh, H)
	}
	if dh0 != nil {
		copy(dh0, g.dh)
	}
	gwx, gwh, gbx, gbh := g.grads()
	gemm(&g.work, true, false, g.in, G, bt, g.x, g.in, g.dgx, G, 1, gwx, G)
	gemm(&g.work, true, false, H, G, bt, g.hp, H, g.dgh, G, 1, gwh, G)
	for r := 0; r < bt; r++ {
		for j, v := range g.dgx[r*G : (r+1)*G] {
			gbx[j] += v
		}
		for j, v := range g.dgh[r*G : (r+1)*G] {
			gbh[j] += v
		}
	}
	if dx != nil {
		gemm(&g.work, false, true, bt, g.in, G, g.dgx, G, g.wx, G, 0, dx, g.in)
	}
}

// checkSeq panics when a sequence buffer has the wrong length; a negative
// ndst skips the destination check.
func checkSeq(where string, batch, steps, nx, in, ndst, out int) {
	if batch <= 0 || steps <= 0 {
		panic(fmt.Sprintf("rl: %s: batch %d and steps %d must be positive", where, batch, steps))
	}
	if nx != batch*steps*in {
		panic(fmt.Sprintf("rl: %s: input has length %d, want %d×%d×%d", where, nx, batch, steps, in))
	}
	if ndst >= 0 && ndst != batch*steps*out {
		panic(fmt.Sprintf("rl: %s: destination has length %d, want %d×%d×%d", where, ndst, batch, steps, out))
	}
}

// Forward writes the hidden states of every time step, dst[b][t][:] (B×T×H),
// for the sequences x (B×T×In, x[b][t][f]). h0 (B×H) is the initial state;
// nil means zeros. x and h0 are copied, so they may change before Backward.
// It allocates only when batch×steps exceeds every earlier pass.
func (g *GRU) Forward(dst, x, h0 []float64, batch, steps int) {
	checkSeq("GRU.Forward", batch, steps, len(x), g.in, len(dst), g.hidden)
	if h0 != nil && len(h0) != batch*g.hidden {
		panic(fmt.Sprintf("rl: GRU.Forward: h0 has length %d, want %d×%d", len(h0), batch, g.hidden))
	}
	g.xbuf = growBuf(g.xbuf, len(x))
	copy(g.xbuf, x)
	copy(dst, g.forward(g.xbuf, h0, batch, steps))
}

// Backward back-propagates through time the gradient dy (B×T×H) of every
// hidden state of the last Forward, adds the parameter gradients to Params'
// gradients, writes the input gradient into dx (B×T×In) and the initial-state
// gradient into dh0 (B×H); either may be nil. batch and steps must equal the
// last Forward's.
func (g *GRU) Backward(dx, dh0, dy []float64, batch, steps int) {
	if batch != g.batch || steps != g.steps || batch == 0 {
		panic(fmt.Sprintf("rl: GRU.Backward: shape %d×%d does not match last Forward %d×%d", batch, steps, g.batch, g.steps))
	}
	checkSeq("GRU.Backward", batch, steps, len(dy), g.hidden, -1, 0)
	if dx != nil && len(dx) != batch*steps*g.in {
		panic(fmt.Sprintf("rl: GRU.Backward: dx has length %d, want %d×%d×%d", len(dx), batch, steps, g.in))
	}
	if dh0 != nil && len(dh0) != batch*g.hidden {
		panic(fmt.Sprintf("rl: GRU.Backward: dh0 has length %d, want %d×%d", len(dh0), batch, g.hidden))
	}
	g.backward(dx, dh0, dy)
}
