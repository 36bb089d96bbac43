package ddpg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

// Agent is a DDPG agent. It is not safe for concurrent use.
type Agent struct {
	cfg                       Config
	stateDim, actionDim       int
	rnd                       *rand.Rand
	actor, critic             *rl.MLP
	actorTarget, criticTarget *rl.MLP
	actorOpt, criticOpt       *rl.Adam
	replay                    *agent.Replay

	eps            float64
	lambda         float64 // the Lagrange multiplier (agent.Constrained)
	steps, updates int
	ou             []float64 // OU noise state

	// minibatch workspaces
	batch            *agent.Batch
	xs, nextA, xNext []float64        // B×(S+A), B×A, B×(S+A)
	q, qNext, dq, mu []float64        // B, B, B, B×A
	pre              []float64        // B×A actor pre-activations
	dx, da           []float64        // B×(S+A), B×A
	dxs              []float64        // B×S: the actor loss's gradient w.r.t. the states (EmbedLoss ActorLoss or BothLosses)
	emb              agent.Embeddings // each task's latest embedding and the last Update's gradient
}

var (
	_ agent.Agent            = (*Agent)(nil)
	_ agent.EmbeddingLearner = (*Agent)(nil)
	_ agent.Releaser         = (*Agent)(nil)
	_ agent.Freezer          = (*Agent)(nil)
	_ agent.Constrained      = (*Agent)(nil)
)

// New returns an agent for stateDim-wide states and actionDim-wide actions
// with FIRM's configuration changed by opts, drawing initial weights,
// minibatches and noise from rnd.
func New(stateDim, actionDim int, rnd *rand.Rand, opts ...Option) (*Agent, error) {
	if stateDim <= 0 || actionDim <= 0 {
		return nil, fmt.Errorf("ddpg: New: state dim %d and action dim %d must be positive", stateDim, actionDim)
	}
	if rnd == nil {
		return nil, fmt.Errorf("ddpg: New: nil random source")
	}
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("ddpg: New: %w", err)
	}
	if cfg.EmbedDim >= stateDim {
		return nil, fmt.Errorf("ddpg: New: embedding width %d must be below the state width %d", cfg.EmbedDim, stateDim)
	}
	cfg.WarmUp = max(cfg.WarmUp, cfg.BatchSize)
	sizes := func(in, out int) []int { return slices.Concat([]int{in}, cfg.Hidden, []int{out}) }
	actor, err := rl.NewMLP(rl.MLPConfig{Sizes: sizes(stateDim, actionDim), Hidden: rl.ReLU, Output: rl.Identity, FinalInit: cfg.FinalInit}, rnd)
	if err != nil {
		return nil, fmt.Errorf("ddpg: actor: %w", err)
	}
	critic, err := rl.NewMLP(rl.MLPConfig{Sizes: sizes(stateDim+actionDim, 1), Hidden: rl.ReLU, Output: rl.Identity, FinalInit: cfg.FinalInit}, rnd)
	if err != nil {
		return nil, fmt.Errorf("ddpg: critic: %w", err)
	}
	replay, err := agent.NewReplay(cfg.ReplayCapacity, stateDim, actionDim)
	if err != nil {
		return nil, fmt.Errorf("ddpg: %w", err)
	}
	b, in := cfg.BatchSize, stateDim+actionDim
	var dxs []float64
	if cfg.EmbedDim > 0 && cfg.EmbedLoss != CriticLoss {
		dxs = make([]float64, b*stateDim)
	}
	return &Agent{
		dxs: dxs, emb: agent.NewEmbeddings(cfg.EmbedDim),
		cfg: cfg, stateDim: stateDim, actionDim: actionDim, rnd: rnd,
		actor: actor, critic: critic, actorTarget: actor.Clone(), criticTarget: critic.Clone(),
		actorOpt: rl.NewAdam(cfg.ActorLR), criticOpt: rl.NewAdam(cfg.CriticLR),
		replay: replay, eps: cfg.EpsStart, ou: make([]float64, actionDim),
		batch: agent.NewBatch(b, stateDim, actionDim),
		xs:    make([]float64, b*in), nextA: make([]float64, b*actionDim), xNext: make([]float64, b*in),
		q: make([]float64, b), qNext: make([]float64, b), dq: make([]float64, b), mu: make([]float64, b*actionDim), pre: make([]float64, b*actionDim),
		dx: make([]float64, b*in), da: make([]float64, b*actionDim),
	}, nil
}

// Config returns the configuration in use.
func (a *Agent) Config() Config {
	c := a.cfg
	c.Hidden = slices.Clone(c.Hidden)
	return c
}

// Actor returns the policy network (shared, not a copy).
func (a *Agent) Actor() *rl.MLP { return a.actor }

// Critic returns the Q network (shared, not a copy).
func (a *Agent) Critic() *rl.MLP { return a.critic }

// Epsilon returns the current exploration scale.
func (a *Agent) Epsilon() float64 { return a.eps }

// SetEpsilon sets the exploration scale, from which the schedule of the
// agent's configuration decays on: an agent restored from a long run
// (whose ε decayed there) adapts with the same exploration as a fresh one
// when set to the configuration's start. It refuses an ε below the
// schedule's minimum or not finite.
func (a *Agent) SetEpsilon(eps float64) error {
	if !(eps >= a.cfg.EpsMin) || math.IsInf(eps, 1) {
		return fmt.Errorf("ddpg: SetEpsilon: ε %v must be finite and at least the schedule's minimum %v", eps, a.cfg.EpsMin)
	}
	a.eps = eps
	return nil
}

// Multiplier is the Lagrange multiplier of a constrained agent
// (agent.Constrained; 0 for one trained without a constraint).
func (a *Agent) Multiplier() float64 { return a.lambda }

// SetMultiplier sets the Lagrange multiplier, which the checkpoint keeps.
func (a *Agent) SetMultiplier(lambda float64) error {
	if !(lambda >= 0) || math.IsInf(lambda, 1) {
		return fmt.Errorf("ddpg: SetMultiplier: λ %v must be finite and not negative", lambda)
	}
	a.lambda = lambda
	return nil
}

// EpsilonStart is the configuration's initial ε.
func (a *Agent) EpsilonStart() float64 { return a.cfg.EpsStart }

// Replay returns the replay buffer.
func (a *Agent) Replay() *agent.Replay { return a.replay }

// Act writes μ(state) into dst and, when explore is set, adds ε-scaled
// Gaussian or OU noise, clips to [−1, 1] and decays ε. It does not allocate.
func (a *Agent) Act(dst, state []float64, explore bool) []float64 {
	a.actor.Forward(dst, state, 1)
	squash(dst)
	if !explore {
		return dst
	}
	for i := range dst {
		n := a.rnd.NormFloat64() * a.cfg.NoiseSigma
		if a.cfg.OU {
			a.ou[i] += -a.cfg.OUTheta*a.ou[i] + n
			n = a.ou[i]
		}
		dst[i] = max(-1, min(1, dst[i]+a.eps*n))
	}
	a.eps = max(a.cfg.EpsMin, a.eps-a.cfg.EpsDecay)
	return dst
}

// Observe stores t in the replay buffer; a terminal transition resets the OU
// noise.
func (a *Agent) Observe(t agent.Transition) {
	a.replay.Add(t)
	a.steps++
	if t.Done {
		clear(a.ou)
	}
}

// Update runs one DDPG update on a minibatch once WarmUp transitions are
// stored: the critic minimises the squared TD error against
// r + γ(1−done)·Q'(s', μ'(s')), the actor ascends Q(s, μ(s)), and both target
// networks move towards the online ones by τ.
func (a *Agent) Update() (agent.Stats, error) {
	st := agent.Stats{Updates: a.updates, Steps: a.steps, Epsilon: a.eps}
	if a.replay.Len() < a.cfg.WarmUp {
		return st, nil
	}
	if err := a.replay.Sample(a.batch, a.rnd); err != nil {
		return st, fmt.Errorf("ddpg: Update: %w", err)
	}
	B, S, A := a.cfg.BatchSize, a.stateDim, a.actionDim
	bt := a.batch
	inv := 1 / float64(B)
	a.emb.Refresh(bt.States, S, bt.Tasks)
	a.emb.Refresh(bt.Next, S, bt.Tasks)

	// Critic: TD targets from the target networks.
	a.actorTarget.Forward(a.nextA, bt.Next, B)
	squash(a.nextA)
	rl.ConcatRows(a.xNext, bt.Next, a.nextA, B, S, A)
	a.criticTarget.Forward(a.qNext, a.xNext, B)
	rl.ConcatRows(a.xs, bt.States, bt.Actions, B, S, A)
	a.critic.Forward(a.q, a.xs, B)
	var closs, meanQ float64
	for k := range B {
		y := bt.Rewards[k] + a.cfg.Discount*(1-bt.Done[k])*a.qNext[k]
		e := a.q[k] - y
		closs += e * e
		meanQ += a.q[k]
		a.dq[k] = 2 * e * inv
	}
	cp := a.critic.Params()
	cp.ZeroGrad()
	E := a.cfg.EmbedDim
	a.emb.StartUpdate()
	if E > 0 && a.cfg.EmbedLoss != ActorLoss {
		// The TD target's networks are constants (semi-gradient), so the
		// critic loss sees the embedding through Q(s, a) only.
		a.critic.Backward(a.dx, a.dq, B)
		a.addEmbeddingGrad(a.dx, S+A)
	} else {
		a.critic.Backward(nil, a.dq, B)
	}
	st.CriticGradNorm = rl.ClipGradNorm(cp, a.cfg.ClipNorm)
	a.criticOpt.Step(cp)

	// Actor: ∂(−mean Q(s, μ(s)) + c·mean‖u‖²)/∂θ via the critic's input
	// gradient, where μ = tanh(u) and c is the squash penalty.
	a.actor.Forward(a.pre, bt.States, B)
	copy(a.mu, a.pre)
	squash(a.mu)
	rl.ConcatRows(a.xs, bt.States, a.mu, B, S, A)
	a.critic.Forward(a.q, a.xs, B)
	var aloss float64
	for k := range B {
		aloss -= a.q[k]
		a.dq[k] = -inv
	}
	a.critic.BackwardInput(a.dx, a.dq, B)
	pen := 2 * a.cfg.SquashPenalty * inv
	for k := range B {
		for j := range A {
			i := k*A + j
			m := a.mu[i]
			a.da[i] = a.dx[k*(S+A)+S+j]*(1-m*m) + pen*a.pre[i]
		}
	}
	ap := a.actor.Params()
	ap.ZeroGrad()
	a.actor.Backward(a.dxs, a.da, B) // dxs is nil unless the actor loss reaches the embedding
	if a.dxs != nil {
		// The actor loss sees the embedding twice per sample: through the
		// critic's state input and through the actor's.
		a.addEmbeddingGrad(a.dx, S+A)
		a.addEmbeddingGrad(a.dxs, S)
	}
	a.emb.FinishUpdate()
	st.ActorGradNorm = rl.ClipGradNorm(ap, a.cfg.ClipNorm)
	a.actorOpt.Step(ap)

	if err := rl.Polyak(a.actorTarget.Params(), ap, a.cfg.Tau); err != nil {
		return st, fmt.Errorf("ddpg: Update: %w", err)
	}
	if err := rl.Polyak(a.criticTarget.Params(), cp, a.cfg.Tau); err != nil {
		return st, fmt.Errorf("ddpg: Update: %w", err)
	}
	a.updates++
	st.Updated, st.Updates = true, a.updates
	st.CriticLoss, st.ActorLoss, st.MeanQ = closs*inv, aloss*inv, meanQ*inv
	if math.IsNaN(st.CriticLoss) || math.IsInf(st.CriticLoss, 0) {
		return st, fmt.Errorf("ddpg: Update %d: critic loss is %v", a.updates, st.CriticLoss)
	}
	return st, nil
}

// addEmbeddingGrad adds to the embedding gradient the embedding entries
// (the last EmbedDim of each row's state part) of the gradient rows g
// (width stride) of the minibatch's samples of the current task.
func (a *Agent) addEmbeddingGrad(g []float64, stride int) {
	a.emb.Accumulate(g, stride, a.stateDim, a.batch.Tasks)
}

// SetEmbedding sets task's embedding (Config().EmbedDim values, copied) and
// makes task the current one: Update then trains every sampled transition
// of a task with that task's latest embedding in place of the one its
// states were recorded with, and EmbeddingGrad is the gradient with respect
// to the current task's, over its samples.
func (a *Agent) SetEmbedding(task int, e []float64) error {
	if err := a.emb.Set(task, e); err != nil {
		return fmt.Errorf("ddpg: SetEmbedding: %w", err)
	}
	return nil
}

// EmbeddingGrad returns the gradient of the last Update's Config().EmbedLoss
// with respect to the current task's embedding (the state's last
// Config().EmbedDim entries), summed over the minibatch's samples of that
// task: the meta learner's AddGrad input. It is nil without an embedding or
// before the first update, and shared: copy it to keep it.
func (a *Agent) EmbeddingGrad() []float64 { return a.emb.Grad() }

// squash applies tanh in place: the actor's output layer is linear so that
// Update can see (and penalise) the pre-activations.
func squash(x []float64) {
	for i, v := range x {
		x[i] = math.Tanh(v)
	}
}

// Freeze returns the policy alone: the actor (whose workspaces and
// gradients it drops) with the exploration state, acting as a does with
// a's random source. a must not be used afterwards.
func (a *Agent) Freeze() agent.Policy {
	a.actor.Release()
	return &Agent{cfg: a.cfg, stateDim: a.stateDim, actionDim: a.actionDim, rnd: a.rnd,
		actor: a.actor, eps: a.eps, ou: a.ou}
}

// Release returns the networks' gradients and batch workspaces to the
// process's scratch pools and keeps the optimisers' moments at float32
// precision (rl.Adam.Compact) until the next update (the minibatch buffers
// of the agent itself stay: they are a few kilobytes).
func (a *Agent) Release() {
	for _, n := range []*rl.MLP{a.actor, a.critic, a.actorTarget, a.criticTarget} {
		if n != nil { // a frozen policy has the actor alone
			n.Release()
		}
	}
	for _, o := range []*rl.Adam{a.actorOpt, a.criticOpt} {
		if o != nil {
			o.Compact()
		}
	}
}
