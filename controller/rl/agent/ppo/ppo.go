package ppo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

// Head is the kind of policy distribution.
type Head int

// Policy heads.
const (
	// Discrete is a categorical distribution over N actions; the action
	// vector is one-hot of length N (see Index).
	Discrete Head = iota
	// Continuous is a diagonal Gaussian whose samples are clipped to [−1, 1].
	Continuous
)

// String returns the head's name.
func (h Head) String() string {
	switch h {
	case Discrete:
		return "discrete"
	case Continuous:
		return "continuous"
	}
	return fmt.Sprintf("Head(%d)", int(h))
}

// Agent is a PPO agent. It is not safe for concurrent use.
type Agent struct {
	cfg                 Config
	head                Head
	stateDim, actionDim int // actionDim: N for Discrete, A for Continuous
	rnd                 *rand.Rand

	actor, critic       *rl.MLP
	logStd              *rl.Params // Continuous only (length A), else length 0
	actorOpt, criticOpt *rl.Adam
	logStdOpt           *rl.Adam

	steps, updates int
	lambda         float64 // the Lagrange multiplier (agent.Constrained)

	// Act workspace and the last exploring Act's unclipped sample.
	out, pending, pendingClipped []float64
	hasPending                   bool

	// rollout storage: states and next states n×S, raw actions n×A
	// (Continuous) or indices (Discrete).
	states, next, raw []float64
	index             []int
	rewards           []float64
	done              []bool
	tasks             []int // each transition's Task

	// Embedding (WithEmbedding): each task's latest embedding, the
	// current task, and the last Update's gradient with respect to it.
	emb agent.Embeddings

	// Update workspaces, grown on demand.
	values, nextValues, oldLogp, adv, ret, dist []float64
	end                                         []bool
	perm                                        []int
	mbS, mbRaw, mbOld, mbAdv, mbRet, mbOut      []float64
	mbIdx, mbTask                               []int
	dOut, probs, mbV, dV, dx                    []float64
}

var _ agent.EmbeddingLearner = (*Agent)(nil)

// NewDiscrete returns an agent with a categorical head over n actions for
// stateDim-wide states, with the artifact's configuration changed by opts,
// drawing initial weights, samples and minibatch orders from rnd. Its
// action vectors are one-hot of length n.
func NewDiscrete(stateDim, n int, rnd *rand.Rand, opts ...Option) (*Agent, error) {
	if n < 2 {
		return nil, fmt.Errorf("ppo: NewDiscrete: need at least 2 actions, got %d", n)
	}
	return newAgent(Discrete, stateDim, n, rnd, opts)
}

// NewContinuous returns an agent with a diagonal-Gaussian head over
// actionDim-wide actions in [−1, 1] for stateDim-wide states, otherwise like
// NewDiscrete.
func NewContinuous(stateDim, actionDim int, rnd *rand.Rand, opts ...Option) (*Agent, error) {
	return newAgent(Continuous, stateDim, actionDim, rnd, opts)
}

func newAgent(head Head, stateDim, actionDim int, rnd *rand.Rand, opts []Option) (*Agent, error) {
	if stateDim <= 0 || actionDim <= 0 {
		return nil, fmt.Errorf("ppo: New: state dim %d and action dim %d must be positive", stateDim, actionDim)
	}
	if rnd == nil {
		return nil, fmt.Errorf("ppo: New: nil random source")
	}
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("ppo: New: %w", err)
	}
	if cfg.EmbedDim >= stateDim {
		return nil, fmt.Errorf("ppo: New: embedding of %d must be narrower than the state of %d", cfg.EmbedDim, stateDim)
	}
	sizes := func(out int) []int { return slices.Concat([]int{stateDim}, cfg.Hidden, []int{out}) }
	// Small policy outputs start near-uniform / centred (as in common PPO
	// implementations' 0.01-scaled output layer).
	actor, err := rl.NewMLP(rl.MLPConfig{Sizes: sizes(actionDim), Hidden: rl.Tanh, Output: rl.Identity, FinalInit: 0.01}, rnd)
	if err != nil {
		return nil, fmt.Errorf("ppo: actor: %w", err)
	}
	critic, err := rl.NewMLP(rl.MLPConfig{Sizes: sizes(1), Hidden: rl.Tanh, Output: rl.Identity}, rnd)
	if err != nil {
		return nil, fmt.Errorf("ppo: critic: %w", err)
	}
	a := &Agent{
		cfg: cfg, head: head, stateDim: stateDim, actionDim: actionDim, rnd: rnd,
		actor: actor, critic: critic, logStd: rl.NewParams(0),
		actorOpt: rl.NewAdam(cfg.LR), criticOpt: rl.NewAdam(cfg.LR), logStdOpt: rl.NewAdam(cfg.LR),
		out: make([]float64, actionDim), pending: make([]float64, actionDim), pendingClipped: make([]float64, actionDim),
		emb: agent.NewEmbeddings(cfg.EmbedDim),
	}
	if head == Continuous {
		a.logStd = rl.NewParams(actionDim)
		for i := range a.logStd.Values() {
			a.logStd.Values()[i] = cfg.InitLogStd
		}
	}
	return a, nil
}

// Config returns the configuration in use.
func (a *Agent) Config() Config {
	c := a.cfg
	c.Hidden = slices.Clone(c.Hidden)
	return c
}

// Head returns the policy head.
func (a *Agent) Head() Head { return a.head }

// Actor returns the policy network (logits or Gaussian means; shared).
func (a *Agent) Actor() *rl.MLP { return a.actor }

// Critic returns the value network (shared, not a copy).
func (a *Agent) Critic() *rl.MLP { return a.critic }

// LogStd returns the continuous head's log-standard deviations (shared; empty
// for the discrete head).
func (a *Agent) LogStd() []float64 { return a.logStd.Values() }

// Stored returns the number of transitions in the current rollout.
func (a *Agent) Stored() int { return len(a.rewards) }

// Index returns the discrete action encoded in a one-hot (or any) action
// vector: the index of its largest entry, the first on ties.
func Index(action []float64) int {
	best := 0
	for i, v := range action {
		if v > action[best] {
			best = i
		}
	}
	return best
}

// Act writes the action for state into dst (len N one-hot for Discrete, len
// A in [−1, 1] for Continuous). Greedy acts take the most probable action or
// the clipped mean; exploring acts sample the policy. It does not allocate.
func (a *Agent) Act(dst, state []float64, explore bool) []float64 {
	if len(dst) != a.actionDim || len(state) != a.stateDim {
		panic(fmt.Sprintf("ppo: Act: dst %d and state %d, want %d and %d", len(dst), len(state), a.actionDim, a.stateDim))
	}
	a.actor.Forward(a.out, state, 1)
	if a.head == Discrete {
		k := Index(a.out)
		if explore {
			k = sampleCategorical(a.out, a.rnd.Float64())
		}
		clear(dst)
		dst[k] = 1
		return dst
	}
	ls := a.logStd.Values()
	for i, m := range a.out {
		u := m
		if explore {
			u += math.Exp(ls[i]) * a.rnd.NormFloat64()
		}
		a.pending[i] = u
		dst[i] = max(-1, min(1, u))
	}
	copy(a.pendingClipped, dst)
	a.hasPending = explore
	return dst
}

// sampleCategorical draws an index from softmax(logits) with a uniform u.
func sampleCategorical(logits []float64, u float64) int {
	m := logits[0]
	for _, v := range logits[1:] {
		m = max(m, v)
	}
	var s float64
	for _, v := range logits {
		s += math.Exp(v - m)
	}
	u *= s
	for i, v := range logits {
		u -= math.Exp(v - m)
		if u < 0 {
			return i
		}
	}
	return len(logits) - 1
}

// Observe appends t to the rollout. For the continuous head, when t.Action is
// the last exploring Act's output, the unclipped sample is stored so that
// log-probabilities are those of the sampled action; otherwise t.Action
// itself is used. For the discrete head the action is Index(t.Action).
// Log-probabilities and values under the behaviour policy are computed at
// Update: the networks do not change while a rollout is collected.
func (a *Agent) Observe(t agent.Transition) {
	if len(t.State) != a.stateDim || len(t.Next) != a.stateDim || len(t.Action) != a.actionDim {
		panic(fmt.Sprintf("ppo: Observe: state %d, next %d, action %d, want %d, %d, %d",
			len(t.State), len(t.Next), len(t.Action), a.stateDim, a.stateDim, a.actionDim))
	}
	a.states = append(a.states, t.State...)
	a.next = append(a.next, t.Next...)
	a.rewards = append(a.rewards, t.Reward)
	a.done = append(a.done, t.Done)
	a.tasks = append(a.tasks, t.Task)
	if a.head == Discrete {
		a.index = append(a.index, Index(t.Action))
	} else if a.hasPending && slices.Equal(t.Action, a.pendingClipped) {
		a.raw = append(a.raw, a.pending...)
	} else {
		a.raw = append(a.raw, t.Action...)
	}
	a.hasPending = false
	a.steps++
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Update trains once at least RolloutLen transitions are stored: it
// computes values and GAE advantages (bootstrapping from the critic on each
// step's Next unless it is Done), runs Epochs passes of shuffled minibatches
// of the clipped-surrogate, entropy and value losses over the whole rollout,
// and clears it. With fewer transitions it returns Stats{Updated: false}.
func (a *Agent) Update() (agent.Stats, error) {
	st := agent.Stats{Updates: a.updates, Steps: a.steps}
	n := len(a.rewards)
	if n < a.cfg.RolloutLen {
		return st, nil
	}
	S, A, B := a.stateDim, a.actionDim, min(a.cfg.BatchSize, n)
	a.emb.Refresh(a.states, S, a.tasks)
	a.emb.Refresh(a.next, S, a.tasks)
	a.emb.StartUpdate()
	a.values, a.nextValues = grow(a.values, n), grow(a.nextValues, n)
	a.critic.Forward(a.values, a.states, n)
	a.critic.Forward(a.nextValues, a.next, n)
	a.end = grow(a.end, n)
	for t := range n - 1 {
		a.end[t] = !slices.Equal(a.next[t*S:(t+1)*S], a.states[(t+1)*S:(t+2)*S])
	}
	a.end[n-1] = true
	a.adv, a.ret = grow(a.adv, n), grow(a.ret, n)
	GAE(a.adv, a.ret, a.rewards, a.values, a.nextValues, a.done, a.end, a.cfg.Discount, a.cfg.Lambda)
	var meanV float64
	for _, v := range a.values {
		meanV += v
	}
	st.MeanQ = meanV / float64(n)

	// Behaviour log-probabilities.
	a.dist, a.oldLogp = grow(a.dist, n*A), grow(a.oldLogp, n)
	a.actor.Forward(a.dist, a.states, n)
	a.probs = grow(a.probs, n*A)
	for k := range n {
		if a.head == Discrete {
			logSoftmax(a.probs[k*A:(k+1)*A], a.dist[k*A:(k+1)*A])
			a.oldLogp[k] = a.probs[k*A+a.index[k]]
		} else {
			a.oldLogp[k] = gaussianLogp(a.raw[k*A:(k+1)*A], a.dist[k*A:(k+1)*A], a.logStd.Values())
		}
	}

	a.perm = grow(a.perm, n)
	for i := range a.perm {
		a.perm[i] = i
	}
	var sumSurr, sumEnt, sumV float64
	var batches int
	for range a.cfg.Epochs {
		a.rnd.Shuffle(n, func(i, j int) { a.perm[i], a.perm[j] = a.perm[j], a.perm[i] })
		for lo := 0; lo < n; lo += B {
			idx := a.perm[lo:min(lo+B, n)]
			surr, ent, vl, err := a.minibatch(idx, &st)
			if err != nil {
				return st, err
			}
			sumSurr, sumEnt, sumV = sumSurr+surr, sumEnt+ent, sumV+vl
			batches++
		}
	}
	a.updates++
	a.emb.FinishUpdate()
	st.Updated, st.Updates = true, a.updates
	inv := 1 / float64(batches)
	st.ActorLoss, st.Entropy, st.CriticLoss = sumSurr*inv, sumEnt*inv, sumV*inv
	a.states, a.next, a.raw, a.index, a.rewards, a.done = a.states[:0], a.next[:0], a.raw[:0], a.index[:0], a.rewards[:0], a.done[:0]
	a.tasks = a.tasks[:0]
	return st, nil
}

// minibatch runs one optimisation step on the rollout rows idx and returns
// the surrogate loss, entropy and value loss (mean squared error).
func (a *Agent) minibatch(idx []int, st *agent.Stats) (surr, ent, vloss float64, err error) {
	S, A, b := a.stateDim, a.actionDim, len(idx)
	a.mbS, a.mbOld, a.mbAdv, a.mbRet = grow(a.mbS, b*S), grow(a.mbOld, b), grow(a.mbAdv, b), grow(a.mbRet, b)
	a.mbOut, a.dOut, a.probs = grow(a.mbOut, b*A), grow(a.dOut, b*A), grow(a.probs, max(len(a.probs), b*A))
	a.mbV, a.dV = grow(a.mbV, b), grow(a.dV, b)
	var mean float64
	a.mbTask = grow(a.mbTask, b)
	for r, k := range idx {
		a.mbTask[r] = a.tasks[k]
		copy(a.mbS[r*S:(r+1)*S], a.states[k*S:(k+1)*S])
		a.mbOld[r], a.mbAdv[r], a.mbRet[r] = a.oldLogp[k], a.adv[k], a.ret[k]
		mean += a.adv[k]
	}
	if a.cfg.NormAdv && b > 1 {
		mean /= float64(b)
		var v float64
		for _, x := range a.mbAdv {
			v += (x - mean) * (x - mean)
		}
		sd := math.Sqrt(v / float64(b-1))
		for r, x := range a.mbAdv {
			a.mbAdv[r] = (x - mean) / (sd + 1e-8)
		}
	}

	// Actor.
	a.actor.Forward(a.mbOut, a.mbS, b)
	ap := a.actor.Params()
	ap.ZeroGrad()
	if a.head == Discrete {
		a.mbIdx = grow(a.mbIdx, b)
		for r, k := range idx {
			a.mbIdx[r] = a.index[k]
		}
		surr, ent, _ = categoricalLoss(a.dOut, a.probs[:b*A], a.mbOut, a.mbIdx, a.mbOld, a.mbAdv, A, a.cfg.Clip, a.cfg.EntropyCoef)
	} else {
		a.mbRaw = grow(a.mbRaw, b*A)
		for r, k := range idx {
			copy(a.mbRaw[r*A:(r+1)*A], a.raw[k*A:(k+1)*A])
		}
		a.logStd.ZeroGrad()
		surr, ent, _ = gaussianLoss(a.dOut, a.logStd.Grads(), a.mbOut, a.logStd.Values(), a.mbRaw, a.mbOld, a.mbAdv, a.cfg.Clip, a.cfg.EntropyCoef)
	}
	if E := a.cfg.EmbedDim; E > 0 {
		// The objective's gradient with respect to the current task's
		// embedding, over its rows (other tasks' rows carry theirs).
		a.dx = grow(a.dx, b*S)
		a.actor.Backward(a.dx, a.dOut, b)
		a.emb.Accumulate(a.dx, S, S, a.mbTask)
	} else {
		a.actor.Backward(nil, a.dOut, b)
	}
	st.ActorGradNorm = clipJoint(a.cfg.ClipNorm, ap, a.logStd)
	a.actorOpt.Step(ap)
	if a.head == Continuous {
		a.logStdOpt.Step(a.logStd)
	}

	// Critic: ValueCoef · mean (V − R)².
	a.critic.Forward(a.mbV, a.mbS, b)
	inv := 1 / float64(b)
	for r, v := range a.mbV {
		e := v - a.mbRet[r]
		vloss += e * e
		a.dV[r] = 2 * a.cfg.ValueCoef * e * inv
	}
	vloss *= inv
	cp := a.critic.Params()
	cp.ZeroGrad()
	a.critic.Backward(nil, a.dV, b)
	st.CriticGradNorm = rl.ClipGradNorm(cp, a.cfg.ClipNorm)
	a.criticOpt.Step(cp)
	if math.IsNaN(vloss+surr) || math.IsInf(vloss+surr, 0) {
		return surr, ent, vloss, fmt.Errorf("ppo: Update %d: value loss %v, surrogate loss %v", a.updates+1, vloss, surr)
	}
	return surr, ent, vloss, nil
}

// clipJoint scales the gradients of ps so that their joint Euclidean norm is
// at most maxNorm (≤ 0 disables) and returns the norm before clipping.
func clipJoint(maxNorm float64, ps ...*rl.Params) float64 {
	var s float64
	for _, p := range ps {
		g := p.GradNorm()
		s += g * g
	}
	n := math.Sqrt(s)
	if maxNorm > 0 && n > maxNorm {
		f := maxNorm / n
		for _, p := range ps {
			for i := range p.Grads() {
				p.Grads()[i] *= f
			}
		}
	}
	return n
}

// SetEmbedding sets task's embedding (Config().EmbedDim values, copied) and
// makes task the current one (see WithEmbedding).
func (a *Agent) SetEmbedding(task int, e []float64) error {
	if err := a.emb.Set(task, e); err != nil {
		return fmt.Errorf("ppo: SetEmbedding: %w", err)
	}
	return nil
}

// EmbeddingGrad returns the gradient of the last Update's objective (the
// clipped surrogate minus the entropy bonus, summed over its minibatches)
// with respect to the current task's embedding, over that task's
// transitions: the meta learner's AddGrad input. It is nil without an
// embedding or before the first update, and shared: copy it to keep it.
func (a *Agent) EmbeddingGrad() []float64 { return a.emb.Grad() }
