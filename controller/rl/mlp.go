package rl

import (
	"fmt"
	"math/rand/v2"
)

// MLPConfig describes a multi-layer perceptron.
type MLPConfig struct {
	// Sizes lists the layer widths from input to output; at least two entries.
	Sizes []int
	// Hidden is the activation of every layer but the last; Output of the last.
	Hidden, Output Activation
	// FinalInit, when positive, draws the last layer's weights and biases from
	// U(−FinalInit, FinalInit) instead of the default (DDPG/FIRM use 3e-3).
	FinalInit float64
}

// MLP is a stack of dense layers sharing one Params. It is not safe for
// concurrent use: Forward and Backward use per-network workspaces.
type MLP struct {
	cfg    MLPConfig
	params *Params
	layers []*Dense
	xbuf   []float64   // copy of the last Forward input
	dbuf   [][]float64 // dbuf[i]: gradient w.r.t. layer i's input, i ≥ 1
}

// NewMLP builds an MLP from cfg, initialising weights from rnd: He uniform for
// ReLU layers, Glorot uniform otherwise, zero biases, and the optional small
// final-layer initialisation.
func NewMLP(cfg MLPConfig, rnd *rand.Rand) (*MLP, error) {
	if rnd == nil {
		return nil, fmt.Errorf("rl: NewMLP: nil random source")
	}
	m, err := buildMLP(cfg)
	if err != nil {
		return nil, err
	}
	for _, l := range m.layers {
		l.initDefault(rnd)
	}
	if cfg.FinalInit > 0 {
		last := m.layers[len(m.layers)-1]
		uniform(last.w, cfg.FinalInit, rnd)
		uniform(last.b, cfg.FinalInit, rnd)
	}
	return m, nil
}

func buildMLP(cfg MLPConfig) (*MLP, error) {
	if len(cfg.Sizes) < 2 {
		return nil, fmt.Errorf("rl: NewMLP: need at least 2 sizes, got %v", cfg.Sizes)
	}
	if cfg.FinalInit < 0 {
		return nil, fmt.Errorf("rl: NewMLP: negative FinalInit %v", cfg.FinalInit)
	}
	n := 0
	for i := 0; i+1 < len(cfg.Sizes); i++ {
		act := cfg.Hidden
		if i+2 == len(cfg.Sizes) {
			act = cfg.Output
		}
		if err := checkLayer(cfg.Sizes[i], cfg.Sizes[i+1], act); err != nil {
			return nil, fmt.Errorf("rl: NewMLP: layer %d: %w", i, err)
		}
		n += cfg.Sizes[i]*cfg.Sizes[i+1] + cfg.Sizes[i+1]
	}
	cfg.Sizes = append([]int(nil), cfg.Sizes...)
	m := &MLP{cfg: cfg, params: NewParams(n)}
	off := 0
	for i := 0; i+1 < len(cfg.Sizes); i++ {
		act := cfg.Hidden
		if i+2 == len(cfg.Sizes) {
			act = cfg.Output
		}
		in, out := cfg.Sizes[i], cfg.Sizes[i+1]
		m.layers = append(m.layers, newDenseAt(in, out, act, m.params, off))
		off += in*out + out
	}
	m.dbuf = make([][]float64, len(m.layers))
	return m, nil
}

// Clone returns an independent network with the same configuration and
// parameter values (gradients zero), e.g. a target network.
func (m *MLP) Clone() *MLP {
	c, err := buildMLP(m.cfg)
	if err != nil {
		panic(err) // m was built from the same, valid configuration
	}
	copy(c.params.values, m.params.values)
	return c
}

// Config returns the network's configuration.
func (m *MLP) Config() MLPConfig {
	c := m.cfg
	c.Sizes = append([]int(nil), c.Sizes...)
	return c
}

// Params returns the contiguous parameter and gradient storage.
func (m *MLP) Params() *Params { return m.params }

// Layers returns the dense layers, input first.
func (m *MLP) Layers() []*Dense { return m.layers }

// InDim returns the input width.
func (m *MLP) InDim() int { return m.cfg.Sizes[0] }

// OutDim returns the output width.
func (m *MLP) OutDim() int { return m.cfg.Sizes[len(m.cfg.Sizes)-1] }

// Release returns the network's batch workspaces, sized by the largest
// batch seen (a minibatch of generated actions makes them megabytes), and
// its gradients to the process's scratch pools, for a process that keeps
// many networks and trains or evaluates few at a time; the next Forward and
// Backward borrow them again. Call it between
// updates: Backward needs a Forward after it, and gradients not yet applied
// are lost.
func (m *MLP) Release() {
	m.params.ReleaseGrads()
	giveBack(m.xbuf)
	m.xbuf = nil
	for i := range m.dbuf {
		giveBack(m.dbuf[i])
		m.dbuf[i] = nil
	}
	for _, l := range m.layers {
		l.Release()
	}
}

// Forward writes the network output for x (batch×InDim, one sample per row)
// into dst (batch×OutDim). The input is copied, so x may change before
// Backward. It allocates only when batch exceeds every earlier batch.
func (m *MLP) Forward(dst, x []float64, batch int) {
	checkBatch("MLP.Forward", batch, len(x), m.InDim(), len(dst), m.OutDim())
	m.xbuf = grow(m.xbuf, len(x))
	copy(m.xbuf, x)
	h := m.xbuf
	for _, l := range m.layers {
		h = l.forward(h, batch)
	}
	copy(dst, h)
}

// Backward back-propagates the output gradient dy (batch×OutDim) through the
// last Forward, adds the parameter gradients to Params().Grads() and writes the
// input gradient into dx (batch×InDim) unless dx is nil. batch must equal the
// last Forward's.
func (m *MLP) Backward(dx, dy []float64, batch int) {
	m.backward(dx, dy, batch, true, "MLP.Backward")
}

// BackwardInput writes the input gradient of the last Forward for the output
// gradient dy into dx without computing parameter gradients: the cheaper
// pass for using a network as a differentiable function of its input, as
// DDPG's actor update uses the critic.
func (m *MLP) BackwardInput(dx, dy []float64, batch int) {
	if dx == nil {
		panic("rl: MLP.BackwardInput: nil dx")
	}
	m.backward(dx, dy, batch, false, "MLP.BackwardInput")
}

func (m *MLP) backward(dx, dy []float64, batch int, params bool, where string) {
	if batch != m.layers[0].batch || batch == 0 {
		panic(fmt.Sprintf("rl: %s: batch %d does not match last Forward batch %d", where, batch, m.layers[0].batch))
	}
	checkBatch(where, batch, len(dy), m.OutDim(), -1, 0)
	if dx != nil && len(dx) != batch*m.InDim() {
		panic(fmt.Sprintf("rl: %s: dx has length %d, want %d×%d", where, len(dx), batch, m.InDim()))
	}
	g := dy
	for i := len(m.layers) - 1; i >= 0; i-- {
		l := m.layers[i]
		var out []float64
		if i == 0 {
			out = dx
		} else {
			m.dbuf[i] = grow(m.dbuf[i], batch*l.in)
			out = m.dbuf[i]
		}
		l.backward(out, g, batch, params)
		g = out
	}
}
