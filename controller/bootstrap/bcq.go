package bootstrap

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

// Config holds BCQ's hyperparameters (Fujimoto, Meger and Precup 2019,
// "Off-policy deep reinforcement learning without exploration"); the
// networks are sized like the project's DDPG (FIRM's 40-40) except the
// generative model, which needs more room to model the recorded actions.
type Config struct {
	Hidden    []int // hidden widths of the critics and the perturbation network
	VAEHidden []int // hidden widths of the VAE's encoder and decoder
	Latent    int   // latent width of the VAE (0: twice the action width)
	// LR is the Adam learning rate of every network.
	LR       float64
	Discount float64 // γ
	Tau      float64 // Polyak coefficient of the target updates
	// Phi bounds the perturbation: an action moves at most Phi from the
	// generated one (in the normalised [−1, 1] space).
	Phi float64
	// Lambda weighs the twin critics' minimum against their maximum in
	// the soft clipped double-Q target.
	Lambda float64
	// Samples is how many generated actions the target and Act choose
	// among.
	Samples int
	// KLWeight weighs the VAE's KL term against its reconstruction loss.
	KLWeight float64
	// Noise is the standard deviation of the Gaussian exploration noise
	// added by Act(explore) once the agent acts online. The default 0.01
	// is small because the action box is linear: 0.1 moves a memory limit
	// by about 150 MiB, far more than the limits HPA+VPA record for most
	// applications leave to spare, and online exploration at 0.1 took the
	// bootstrapped agent's first episodes from HPA+VPA's reward to a third
	// of it through OOM kills (`aware bootstrap` at 92f9f3c, 2 applications).
	Noise          float64
	ReplayCapacity int
	BatchSize      int
}

// DefaultConfig is the paper's BCQ (λ = 0.75, 10 samples, τ = 0.005, γ =
// 0.99, KL weight 0.5) with the project's network sizes and no
// perturbation (Φ = 0; the paper's is 0.05): the policy is the best, by
// the critics, of actions like the recorded ones. HPA and VPA hold an
// allocation for many steps, so the records show one action per state and
// nothing of what happens just beside it; with Φ = 0.05 (about 75 MiB of
// memory in the normalised action box) the critics rated a slightly
// smaller memory limit higher at every step, the allocation drifted down
// step after step into OOM kills, and the states after them were ones the
// records never held (an application of the test split, 92f9f3c's `aware bootstrap
// --phi`: reward 3–6 per episode against HPA+VPA's 142; Φ = 0.005: 124–135;
// Φ = 0: 152–154, above the records).
func DefaultConfig() Config {
	return Config{
		Hidden: []int{40, 40}, VAEHidden: []int{64, 64},
		LR: 1e-3, Discount: 0.99, Tau: 0.005, Phi: 0, Lambda: 0.75, Samples: 10, KLWeight: 0.5,
		Noise: 0.01, ReplayCapacity: 1_000_000, BatchSize: 64,
	}
}

func (c Config) validate() error {
	for _, hs := range [][]int{c.Hidden, c.VAEHidden} {
		if len(hs) == 0 || slices.ContainsFunc(hs, func(h int) bool { return h <= 0 }) {
			return fmt.Errorf("hidden widths %v and %v must be non-empty and positive", c.Hidden, c.VAEHidden)
		}
	}
	switch {
	case c.Latent < 0:
		return fmt.Errorf("latent width %d must not be negative", c.Latent)
	case !(c.LR > 0):
		return fmt.Errorf("learning rate %v must be positive", c.LR)
	case !(c.Discount >= 0 && c.Discount <= 1):
		return fmt.Errorf("discount %v outside [0, 1]", c.Discount)
	case !(c.Tau > 0 && c.Tau <= 1):
		return fmt.Errorf("tau %v outside (0, 1]", c.Tau)
	case !(c.Phi >= 0 && c.Phi <= 2):
		return fmt.Errorf("perturbation bound Φ %v outside [0, 2]", c.Phi)
	case !(c.Lambda >= 0 && c.Lambda <= 1):
		return fmt.Errorf("λ %v outside [0, 1]", c.Lambda)
	case c.Samples < 1:
		return fmt.Errorf("samples %d must be positive", c.Samples)
	case !(c.KLWeight >= 0) || !(c.Noise >= 0):
		return fmt.Errorf("KL weight %v and noise %v must not be negative", c.KLWeight, c.Noise)
	case c.ReplayCapacity <= 0 || c.BatchSize <= 0:
		return fmt.Errorf("replay capacity %d and batch size %d must be positive", c.ReplayCapacity, c.BatchSize)
	}
	return nil
}

// Option changes one knob of the configuration.
type Option func(*Config)

// WithConfig replaces the whole configuration.
func WithConfig(c Config) Option { return func(dst *Config) { *dst = c } }

// WithPhi sets the perturbation bound Φ (0: actions only from the
// generative model, the behaviour-cloning end of BCQ).
func WithPhi(phi float64) Option { return func(c *Config) { c.Phi = phi } }

// WithReplay sets the replay memory's capacity in transitions (the
// oldest are overwritten).
func WithReplay(n int) Option { return func(c *Config) { c.ReplayCapacity = n } }

// WithBatch sets the minibatch size.
func WithBatch(n int) Option { return func(c *Config) { c.BatchSize = n } }

// logStd bounds of the VAE's encoder (the paper's clamp).
const minLogStd, maxLogStd = -4, 15

// BCQ is a batch-constrained deep Q-learning agent for continuous actions:
// a state-conditioned variational autoencoder models the recorded actions,
// a perturbation network ξ moves a generated action by at most Φ, twin
// critics learn with the soft clipped double-Q target, and the policy is
// the best, by the first critic, of Samples generated and perturbed
// actions. Trained on records of another controller it picks actions like
// the recorded ones, where its critics have seen data, instead of the
// out-of-distribution actions a plain off-policy actor-critic overrates.
// It implements agent.Agent, so it keeps learning once it acts online. It
// is not safe for concurrent use.
type BCQ struct {
	cfg                 Config
	stateDim, actionDim int
	latent              int
	rnd                 *rand.Rand

	enc, dec, xi, q1, q2 *rl.MLP
	xiT, q1T, q2T        *rl.MLP
	// trained lists the trained networks in a fixed order, with their
	// checkpoint names; opt[i] is trained[i]'s optimiser.
	trained        []named
	opt            []*rl.Adam
	replay         *agent.Replay
	batch          *agent.Batch
	steps, updates int
}

var (
	_ agent.Agent    = (*BCQ)(nil)
	_ agent.Releaser = (*BCQ)(nil)
	_ agent.Freezer  = (*BCQ)(nil)
)

// Release returns what the agent needs only while it trains or acts: the
// networks' gradients and batch workspaces (an update evaluates ten
// generated actions per sampled state, which sizes them at megabytes) and
// its minibatch, and keeps its optimisers' moments at float32 precision
// (rl.Adam.Compact) until the next update. An idle agent then holds its
// weights, half-size optimiser state and replay memory alone.
func (b *BCQ) Release() {
	for _, n := range []*rl.MLP{b.enc, b.dec, b.xi, b.q1, b.q2, b.xiT, b.q1T, b.q2T} {
		if n != nil { // a frozen policy has three networks
			n.Release()
		}
	}
	for _, o := range b.opt {
		o.Compact()
	}
	b.batch = nil
}

// Freeze returns the policy alone: the decoder, the perturbation network
// and the first critic (whose workspaces and gradients it drops), acting
// as b does with b's random source. b must not be used afterwards.
func (b *BCQ) Freeze() agent.Policy {
	for _, n := range []*rl.MLP{b.dec, b.xi, b.q1} {
		n.Release()
	}
	return &BCQ{cfg: b.cfg, stateDim: b.stateDim, actionDim: b.actionDim, latent: b.latent, rnd: b.rnd,
		dec: b.dec, xi: b.xi, q1: b.q1}
}

// New returns a BCQ agent for stateDim-wide states and actionDim-wide
// actions (normalised to [−1, 1]), drawing weights, minibatches and noise
// from rnd.
func New(stateDim, actionDim int, rnd *rand.Rand, opts ...Option) (*BCQ, error) {
	if stateDim <= 0 || actionDim <= 0 {
		return nil, fmt.Errorf("bootstrap: New: state dim %d and action dim %d must be positive", stateDim, actionDim)
	}
	if rnd == nil {
		return nil, fmt.Errorf("bootstrap: New: nil random source")
	}
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("bootstrap: New: %w", err)
	}
	cfg.Hidden, cfg.VAEHidden = slices.Clone(cfg.Hidden), slices.Clone(cfg.VAEHidden)
	L := cfg.Latent
	if L == 0 {
		L = 2 * actionDim
	}
	S, A := stateDim, actionDim
	mlp := func(in, out int, hidden []int, final float64) (*rl.MLP, error) {
		return rl.NewMLP(rl.MLPConfig{Sizes: slices.Concat([]int{in}, hidden, []int{out}), Hidden: rl.ReLU, Output: rl.Identity, FinalInit: final}, rnd)
	}
	b := &BCQ{cfg: cfg, stateDim: S, actionDim: A, latent: L, rnd: rnd}
	var err error
	for _, n := range []struct {
		dst     **rl.MLP
		in, out int
		hidden  []int
		final   float64
	}{
		{&b.enc, S + A, 2 * L, cfg.VAEHidden, 0},
		{&b.dec, S + L, A, cfg.VAEHidden, 0},
		{&b.xi, S + A, A, cfg.Hidden, 3e-3},
		{&b.q1, S + A, 1, cfg.Hidden, 3e-3},
		{&b.q2, S + A, 1, cfg.Hidden, 3e-3},
	} {
		if *n.dst, err = mlp(n.in, n.out, n.hidden, n.final); err != nil {
			return nil, fmt.Errorf("bootstrap: New: %w", err)
		}
	}
	b.xiT, b.q1T, b.q2T = b.xi.Clone(), b.q1.Clone(), b.q2.Clone()
	b.trained = []named{{"encoder", b.enc}, {"decoder", b.dec}, {"perturbation", b.xi}, {"critic1", b.q1}, {"critic2", b.q2}}
	for range b.trained {
		b.opt = append(b.opt, rl.NewAdam(cfg.LR))
	}
	if b.replay, err = agent.NewReplay(cfg.ReplayCapacity, S, A); err != nil {
		return nil, fmt.Errorf("bootstrap: New: %w", err)
	}
	return b, nil
}

// named is a network under its checkpoint name.
type named struct {
	name string
	net  *rl.MLP
}

// Config returns the configuration in use.
func (b *BCQ) Config() Config {
	c := b.cfg
	c.Hidden, c.VAEHidden = slices.Clone(c.Hidden), slices.Clone(c.VAEHidden)
	return c
}

// Replay returns the replay buffer (the recorded transitions, then the
// agent's own).
func (b *BCQ) Replay() *agent.Replay { return b.replay }

// generate writes into dst (n×A) the decoder's actions for states (n×S)
// with latent draws from N(0, 1) clipped to ±0.5, as the paper samples.
func (b *BCQ) generate(sc *rl.Scratch, dst, states []float64, n int) {
	S, L := b.stateDim, b.latent
	in := sc.Take(n * (S + L))
	for k := range n {
		copy(in[k*(S+L):], states[k*S:(k+1)*S])
		for j := range L {
			in[k*(S+L)+S+j] = max(-0.5, min(0.5, b.rnd.NormFloat64()))
		}
	}
	b.dec.Forward(dst, in, n)
	for i, v := range dst {
		dst[i] = math.Tanh(v)
	}
}

// perturb writes clip(a + Φ·tanh(ξ(s, a)), −1, 1) into dst (n×A) for
// states (n×S) and actions a (n×A) through network xi; pre receives ξ's
// outputs (for back-propagation).
func (b *BCQ) perturb(sc *rl.Scratch, dst, pre []float64, xi *rl.MLP, states, a []float64, n int) {
	S, A := b.stateDim, b.actionDim
	x := sc.Take(n * (S + A))
	rl.ConcatRows(x, states, a, n, S, A)
	xi.Forward(pre, x, n)
	for i := range dst {
		dst[i] = max(-1, min(1, a[i]+b.cfg.Phi*math.Tanh(pre[i])))
	}
}

// repeat returns x (n rows of width w) with every row repeated k times.
func repeat(sc *rl.Scratch, x []float64, n, w, k int) []float64 {
	out := sc.Take(n * k * w)[:0]
	for i := range n {
		for range k {
			out = append(out, x[i*w:(i+1)*w]...)
		}
	}
	return out
}

// Act writes the chosen action for state into dst: of Samples generated
// and perturbed actions, the one the first critic values most; with
// explore, plus Gaussian noise of standard deviation Noise, clipped to
// [−1, 1].
func (b *BCQ) Act(dst, state []float64, explore bool) []float64 {
	n, S, A := b.cfg.Samples, b.stateDim, b.actionDim
	sc := rl.BorrowScratch()
	defer sc.Release()
	states := repeat(sc, state, 1, S, n)
	gen, acts, pre := sc.Take(n*A), sc.Take(n*A), sc.Take(n*A)
	b.generate(sc, gen, states, n)
	b.perturb(sc, acts, pre, b.xi, states, gen, n)
	x, q := sc.Take(n*(S+A)), sc.Take(n)
	rl.ConcatRows(x, states, acts, n, S, A)
	b.q1.Forward(q, x, n)
	best := 0
	for i := range q {
		if q[i] > q[best] {
			best = i
		}
	}
	copy(dst, acts[best*A:(best+1)*A])
	if explore {
		for i := range dst {
			dst[i] = max(-1, min(1, dst[i]+b.cfg.Noise*b.rnd.NormFloat64()))
		}
	}
	return dst
}

// Q returns the first critic's value of action in state.
func (b *BCQ) Q(state, action []float64) float64 {
	x := slices.Concat(state, action)
	q := []float64{0}
	b.q1.Forward(q, x, 1)
	return q[0]
}

// Observe stores t in the replay buffer.
func (b *BCQ) Observe(t agent.Transition) {
	b.replay.Add(t)
	b.steps++
}

// Update runs one BCQ update on a minibatch once the buffer holds one:
// the VAE fits the recorded actions, the twin critics the soft clipped
// double-Q target over Samples generated actions of each next state, and
// the perturbation network ascends the first critic; the targets follow
// by τ. Stats.ActorLoss is the perturbation network's loss, CriticLoss the
// twin critics' summed TD loss, MeanQ the first critic's mean value of the
// minibatch's recorded actions, Entropy the VAE's loss.
func (b *BCQ) Update() (agent.Stats, error) {
	st := agent.Stats{Updates: b.updates, Steps: b.steps}
	if b.replay.Len() < b.cfg.BatchSize {
		return st, nil
	}
	if b.batch == nil {
		b.batch = agent.NewBatch(b.cfg.BatchSize, b.stateDim, b.actionDim)
	}
	if err := b.replay.Sample(b.batch, b.rnd); err != nil {
		return st, fmt.Errorf("bootstrap: Update: %w", err)
	}
	B, S, A, L := b.cfg.BatchSize, b.stateDim, b.actionDim, b.latent
	bt := b.batch
	for _, n := range b.trained {
		n.net.Params().ZeroGrad()
	}
	sc := rl.BorrowScratch()
	defer sc.Release()

	// VAE: reconstruction plus KL to N(0, 1), through the
	// reparameterisation z = μ + σ·ε.
	sa := sc.Take(B * (S + A))
	rl.ConcatRows(sa, bt.States, bt.Actions, B, S, A)
	ml := sc.Take(B * 2 * L)
	b.enc.Forward(ml, sa, B)
	eps, sigma, z := sc.Take(B*L), sc.Take(B*L), sc.Take(B*L)
	for k := range B {
		for j := range L {
			i := k*L + j
			ls := max(minLogStd, min(maxLogStd, ml[k*2*L+L+j]))
			sigma[i] = math.Exp(ls)
			eps[i] = b.rnd.NormFloat64()
			z[i] = ml[k*2*L+j] + sigma[i]*eps[i]
		}
	}
	sz := sc.Take(B * (S + L))
	rl.ConcatRows(sz, bt.States, z, B, S, L)
	recon := sc.Take(B * A)
	b.dec.Forward(recon, sz, B)
	var vaeLoss float64
	dRecon := sc.Take(B * A)
	invBA, invBL := 1/float64(B*A), 1/float64(B*L)
	for i, u := range recon {
		a := math.Tanh(u)
		e := a - bt.Actions[i]
		vaeLoss += e * e * invBA
		dRecon[i] = 2 * e * invBA * (1 - a*a)
	}
	dsz := sc.Take(B * (S + L))
	b.dec.Backward(dsz, dRecon, B)
	w := b.cfg.KLWeight
	dml := sc.Take(B * 2 * L)
	for k := range B {
		for j := range L {
			i := k*L + j
			mu, raw := ml[k*2*L+j], ml[k*2*L+L+j]
			ls := max(minLogStd, min(maxLogStd, raw))
			s2 := sigma[i] * sigma[i]
			// KL = −½·mean(1 + 2 log σ − μ² − σ²), weighted by w.
			vaeLoss += w * -0.5 * (1 + 2*ls - mu*mu - s2) * invBL
			dz := dsz[k*(S+L)+S+j]
			dml[k*2*L+j] = dz + w*mu*invBL
			if raw == ls { // not clamped
				dml[k*2*L+L+j] = dz*eps[i]*sigma[i] + w*-(1-s2)*invBL
			}
		}
	}
	b.enc.Backward(nil, dml, B)

	// Critics: y = r + γ(1−done)·max_i [λ min(Q1', Q2') + (1−λ) max(Q1', Q2')]
	// over Samples generated, target-perturbed actions of s'.
	n := b.cfg.Samples
	next := repeat(sc, bt.Next, B, S, n)
	gen, acts, pre := sc.Take(B*n*A), sc.Take(B*n*A), sc.Take(B*n*A)
	b.generate(sc, gen, next, B*n)
	b.perturb(sc, acts, pre, b.xiT, next, gen, B*n)
	xn := sc.Take(B * n * (S + A))
	rl.ConcatRows(xn, next, acts, B*n, S, A)
	qa, qb := sc.Take(B*n), sc.Take(B*n)
	b.q1T.Forward(qa, xn, B*n)
	b.q2T.Forward(qb, xn, B*n)
	y := sc.Take(B)
	lam := b.cfg.Lambda
	for k := range B {
		best := math.Inf(-1)
		for i := k * n; i < (k+1)*n; i++ {
			v := lam*math.Min(qa[i], qb[i]) + (1-lam)*math.Max(qa[i], qb[i])
			best = math.Max(best, v)
		}
		y[k] = bt.Rewards[k] + b.cfg.Discount*(1-bt.Done[k])*best
	}
	q, dq := sc.Take(B), sc.Take(B)
	invB := 1 / float64(B)
	var closs, meanQ float64
	for ci, c := range []*rl.MLP{b.q1, b.q2} {
		c.Forward(q, sa, B)
		for k := range B {
			e := q[k] - y[k]
			closs += e * e * invB
			dq[k] = 2 * e * invB
			if ci == 0 {
				meanQ += q[k] * invB
			}
		}
		c.Backward(nil, dq, B)
	}

	// Perturbation: ascend Q1(s, clip(â + Φ·tanh ξ(s, â))) for generated â.
	gen1, acts1, pre1 := sc.Take(B*A), sc.Take(B*A), sc.Take(B*A)
	b.generate(sc, gen1, bt.States, B)
	b.perturb(sc, acts1, pre1, b.xi, bt.States, gen1, B)
	xa := sc.Take(B * (S + A))
	rl.ConcatRows(xa, bt.States, acts1, B, S, A)
	b.q1.Forward(q, xa, B)
	var aloss float64
	for k := range B {
		aloss -= q[k] * invB
		dq[k] = -invB
	}
	dxa := sc.Take(B * (S + A))
	b.q1.BackwardInput(dxa, dq, B)
	dpre := sc.Take(B * A)
	for k := range B {
		for j := range A {
			i := k*A + j
			t := math.Tanh(pre1[i])
			if v := gen1[i] + b.cfg.Phi*t; v > -1 && v < 1 { // the clip passes the gradient inside the box
				dpre[i] = dxa[k*(S+A)+S+j] * b.cfg.Phi * (1 - t*t)
			}
		}
	}
	b.xi.Backward(nil, dpre, B)

	for i, n := range b.trained {
		b.opt[i].Step(n.net.Params())
	}
	for _, p := range [][2]*rl.MLP{{b.xiT, b.xi}, {b.q1T, b.q1}, {b.q2T, b.q2}} {
		if err := rl.Polyak(p[0].Params(), p[1].Params(), b.cfg.Tau); err != nil {
			return st, fmt.Errorf("bootstrap: Update: %w", err)
		}
	}
	b.updates++
	st.Updated, st.Updates = true, b.updates
	st.ActorLoss, st.CriticLoss, st.MeanQ, st.Entropy = aloss, closs, meanQ, vaeLoss
	if math.IsNaN(closs) || math.IsInf(closs, 0) || math.IsNaN(vaeLoss) {
		return st, fmt.Errorf("bootstrap: Update %d: critic loss %v, VAE loss %v", b.updates, closs, vaeLoss)
	}
	return st, nil
}
