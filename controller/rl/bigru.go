package rl

import (
	"fmt"
	"math/rand/v2"
	"sync"
)

// BiGRUConfig describes a stacked bidirectional GRU.
type BiGRUConfig struct {
	// In is the input feature width, Hidden the state width of each direction.
	In, Hidden int
	// Layers is the number of stacked bidirectional layers; 0 means 2.
	Layers int
}

// BiGRU is a stack of bidirectional GRU layers over B×T×In sequences. Each
// layer runs a forward GRU and a time-reversed GRU over its input and
// concatenates their states per time step, out[b][t] = [→h_t, ←h_t] (2H
// wide), which feeds the next layer. All parameters share one Params, laid
// out layer by layer, forward direction first. It is not safe for concurrent
// use.
type BiGRU struct {
	cfg      BiGRUConfig
	params   *Params
	fwd, bwd []*GRU

	xbuf         []float64   // copy of the last Forward input
	out          [][]float64 // out[l]: layer l's output (B×T×2H)
	din          [][]float64 // din[l]: gradient w.r.t. layer l's input, l ≥ 1
	dyf, dyb     []float64   // B×T×H: output gradient split by direction
	batch, steps int

	// The two directions of a layer are independent, so the time-reversed
	// GRU runs on a helper goroutine while the caller runs the forward one.
	wg      sync.WaitGroup
	helper  func()    // m.runReverse, made once so that starting it does not allocate
	rev     int       // layer the helper works on
	revBack bool      // whether the helper runs a backward pass
	revIn   []float64 // forward: the layer's input
	revOut  []float64 // forward: the reverse GRU's states
	revDy   []float64 // backward: the reverse GRU's output gradient
	revDx   []float64 // backward: its input gradient (nil or revBuf), added to the forward GRU's
	revBuf  []float64 // storage behind revDx, kept while revDx is nil
	revErr  any       // a panic raised on the helper, re-raised on the caller
}

// NewBiGRU builds a BiGRU from cfg with PyTorch's initialisation
// U(−1/√Hidden, 1/√Hidden) drawn from rnd.
func NewBiGRU(cfg BiGRUConfig, rnd *rand.Rand) (*BiGRU, error) {
	if rnd == nil {
		return nil, fmt.Errorf("rl: NewBiGRU: nil random source")
	}
	if cfg.Layers == 0 {
		cfg.Layers = 2
	}
	if cfg.In <= 0 || cfg.Hidden <= 0 || cfg.Layers < 0 {
		return nil, fmt.Errorf("rl: NewBiGRU: in %d, hidden %d and layers %d must be positive", cfg.In, cfg.Hidden, cfg.Layers)
	}
	n := 0
	for l := range cfg.Layers {
		n += 2 * gruParamLen(layerIn(cfg, l), cfg.Hidden)
	}
	m := &BiGRU{cfg: cfg, params: NewParams(n)}
	off := 0
	for l := range cfg.Layers {
		in := layerIn(cfg, l)
		f := newGRUAt(in, cfg.Hidden, false, m.params, off)
		off += gruParamLen(in, cfg.Hidden)
		b := newGRUAt(in, cfg.Hidden, true, m.params, off)
		off += gruParamLen(in, cfg.Hidden)
		f.initDefault(rnd)
		b.initDefault(rnd)
		m.fwd, m.bwd = append(m.fwd, f), append(m.bwd, b)
	}
	m.out = make([][]float64, cfg.Layers)
	m.din = make([][]float64, cfg.Layers)
	m.helper = m.runReverse
	return m, nil
}

// layerIn is the input width of layer l.
func layerIn(cfg BiGRUConfig, l int) int {
	if l == 0 {
		return cfg.In
	}
	return 2 * cfg.Hidden
}

// Config returns the configuration with Layers filled in.
func (m *BiGRU) Config() BiGRUConfig { return m.cfg }

// Params returns the contiguous parameter and gradient storage.
func (m *BiGRU) Params() *Params { return m.params }

// Layers returns layer l's forward and time-reversed GRUs.
func (m *BiGRU) Layers(l int) (forward, backward *GRU) { return m.fwd[l], m.bwd[l] }

// InDim returns the input feature width.
func (m *BiGRU) InDim() int { return m.cfg.In }

// OutDim returns the output width per time step, 2·Hidden.
func (m *BiGRU) OutDim() int { return 2 * m.cfg.Hidden }

// Forward writes the top layer's concatenated states dst[b][t] = [→h_t, ←h_t]
// (B×T×2H) for the sequences x (B×T×In) from zero initial states. x is copied,
// so it may change before Backward. It allocates only when batch×steps exceeds
// every earlier pass.
func (m *BiGRU) Forward(dst, x []float64, batch, steps int) {
	checkSeq("BiGRU.Forward", batch, steps, len(x), m.InDim(), len(dst), m.OutDim())
	m.batch, m.steps = batch, steps
	m.xbuf = growBuf(m.xbuf, len(x))
	copy(m.xbuf, x)
	H, bt := m.cfg.Hidden, batch*steps
	h := m.xbuf
	for l := range m.fwd {
		m.rev, m.revBack, m.revIn = l, false, h
		var hf []float64
		m.withReverse(func() { hf = m.fwd[l].forward(h, nil, batch, steps) })
		hb := m.revOut
		m.out[l] = growBuf(m.out[l], bt*2*H)
		o := m.out[l]
		for r := 0; r < bt; r++ {
			copy(o[2*r*H:(2*r+1)*H], hf[r*H:(r+1)*H])
			copy(o[(2*r+1)*H:(2*r+2)*H], hb[r*H:(r+1)*H])
		}
		h = o
	}
	copy(dst, h)
}

// Backward back-propagates dy (B×T×2H) through the last Forward, adds the
// parameter gradients to Params().Grads() and writes the input gradient into
// dx (B×T×In) unless dx is nil. batch and steps must equal the last Forward's.
func (m *BiGRU) Backward(dx, dy []float64, batch, steps int) {
	if batch != m.batch || steps != m.steps || batch == 0 {
		panic(fmt.Sprintf("rl: BiGRU.Backward: shape %d×%d does not match last Forward %d×%d", batch, steps, m.batch, m.steps))
	}
	checkSeq("BiGRU.Backward", batch, steps, len(dy), m.OutDim(), -1, 0)
	if dx != nil && len(dx) != batch*steps*m.InDim() {
		panic(fmt.Sprintf("rl: BiGRU.Backward: dx has length %d, want %d×%d×%d", len(dx), batch, steps, m.InDim()))
	}
	H, bt := m.cfg.Hidden, batch*steps
	// The directions accumulate into disjoint parts of one gradient
	// storage, concurrently: allocate it (if released) before they start.
	m.params.Grads()
	m.dyf, m.dyb = growBuf(m.dyf, bt*H), growBuf(m.dyb, bt*H)
	g := dy
	for l := len(m.fwd) - 1; l >= 0; l-- {
		for r := 0; r < bt; r++ {
			copy(m.dyf[r*H:(r+1)*H], g[2*r*H:(2*r+1)*H])
			copy(m.dyb[r*H:(r+1)*H], g[(2*r+1)*H:(2*r+2)*H])
		}
		var d []float64
		if l == 0 {
			d = dx
		} else {
			m.din[l] = growBuf(m.din[l], bt*layerIn(m.cfg, l))
			d = m.din[l]
		}
		var drev []float64
		if d != nil {
			m.revBuf = growBuf(m.revBuf, len(d))
			drev = m.revBuf
		}
		m.rev, m.revBack, m.revDy, m.revDx = l, true, m.dyb, drev
		m.withReverse(func() { m.fwd[l].backward(d, nil, m.dyf) })
		for i, v := range drev {
			d[i] += v
		}
		g = d
	}
}

// withReverse runs the time-reversed GRU's part (runReverse) on a helper
// goroutine while f runs on the caller's, and returns when both are done. A
// panic on either side reaches the caller, after the helper has finished.
func (m *BiGRU) withReverse(f func()) {
	m.revErr = nil
	m.wg.Add(1)
	go m.helper()
	func() {
		defer m.wg.Wait()
		f()
	}()
	if err := m.revErr; err != nil {
		m.revErr = nil
		panic(err)
	}
}

// runReverse runs the time-reversed GRU of layer m.rev, forward or backward as
// m.revBack says, on the helper goroutine started by withReverse.
func (m *BiGRU) runReverse() {
	defer m.wg.Done()
	defer func() { m.revErr = recover() }()
	g := m.bwd[m.rev]
	if m.revBack {
		g.backward(m.revDx, nil, m.revDy)
		return
	}
	m.revOut = g.forward(m.revIn, nil, m.batch, m.steps)
}
