package train

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/gym"
)

// Episode summarises one episode.
type Episode struct {
	Index int `json:"episode"`
	// Reward is the sum of step rewards (penalties included).
	Reward float64 `json:"reward"`
	Steps  int     `json:"steps"`
	// CPUUtil and MemoryUtil are means over the episode's steps.
	CPUUtil    float64 `json:"cpuUtil"`
	MemoryUtil float64 `json:"memoryUtil"`
	// SLOViolations counts steps with SP < 1; Illegal counts refused moves.
	SLOViolations int `json:"sloViolations"`
	Illegal       int `json:"illegal"`
	// Replicas, CPU (cores per pod) and Memory (bytes per pod) are the mean
	// allocation in effect over the episode's steps.
	Replicas float64 `json:"replicas"`
	CPU      float64 `json:"cpu"`
	Memory   float64 `json:"memory"`
	// Updates is the agent's update count at the end of the episode.
	Updates int `json:"updates"`
}

// Config is one training run.
type Config struct {
	Episodes int
	// Seed makes the environment's episodes reproducible (episode i is
	// reset with Seed+i).
	Seed uint64
	// Discrete says the agent emits one-hot gym.Move choices instead of
	// normalised continuous actions.
	Discrete bool
	// Mapping turns continuous actions into allocations (default
	// gym.Relative); Record encodes the recommender's allocations with it.
	Mapping gym.Mapping
	// Explore is false to evaluate a policy without exploration or updates.
	Explore bool
	// MaxSteps bounds an episode that never truncates (default 100).
	MaxSteps int
	// Progress is called after each episode.
	Progress func(Episode)
	// Observe, when set, sees every step's outcome: its episode, its index
	// within the episode and what the environment reported (the metrics a
	// simulator is fitted from, workloads/sim.Fit).
	Observe func(episode, step int, info gym.Info)
	// ActEvery makes Run's agent act at every ActEvery-th step only, the
	// allocation in force held in the steps between, and learn one
	// transition per action: its state, the reward of the window's last
	// step and the state after it, from which it acts next. That is the
	// cadence of an agent the controller steps through the agent runner,
	// which observes each action over the whole step after its actuation
	// (controller/mpaenv) and so acts every two controller steps or more.
	// The windows are counted within an episode, across them when
	// Continuous. 0 or 1: every step.
	ActEvery int
	// Constraint, when set, trains Run's agent (an agent.Constrained)
	// under a budget on its SLO violations per step: it learns from the
	// reward less λ per violating step, and after each episode λ moves by
	// the constraint's dual ascent (agent.Lagrangian.Update) on the
	// episode's share of violating steps. Episodes report the reward
	// unpenalised. Only while exploring: a greedy evaluation leaves λ.
	Constraint *agent.Lagrangian
	// Continuous makes the episodes consecutive windows of one running
	// service, as on a cluster (the testbed's episodes are windows of one
	// run): the environment is not reset between episodes, and not at
	// all when it already runs (it implements Current and answers true),
	// so that a run goes on from where the last on the same environment
	// left off. Otherwise every episode starts from a reset.
	Continuous bool
}

// Current is an environment that tells the observation of the step it is
// at (workloads/sim.AppEnv), for Continuous runs.
type Current interface {
	Current() (obs []float64, info gym.Info, ok bool)
}

// policy chooses the allocation target (replicas, CPU cores, memory bytes)
// of the next step and says whether the choice was a legal move.
type policy interface {
	choose(target, obs []float64, info gym.Info) (legal bool)
	// learn sees the step's outcome; it returns the update count.
	learn(obs []float64, r float64, next []float64, term bool) (int, error)
}

// Run trains (or, with Explore false, evaluates) ag on env.
func Run(ctx context.Context, env gym.Env, ag agent.Agent, cfg Config) ([]Episode, error) {
	space := env.ActionSpace()
	if space.Dim() != gym.ActDim {
		return nil, fmt.Errorf("train: action space has %d dimensions, want %d", space.Dim(), gym.ActDim)
	}
	if cfg.ActEvery < 0 {
		return nil, fmt.Errorf("train: the agent acts every %d steps", cfg.ActEvery)
	}
	if cfg.Discrete && cfg.ActEvery > 1 {
		// A window's transition takes its last step's reward, where the
		// penalty of an illegal move falls on its first.
		return nil, fmt.Errorf("train: discrete moves are chosen at every step (ActEvery %d)", cfg.ActEvery)
	}
	p := &agentPolicy{ag: ag, bounds: gym.BoundsOf(space), discrete: cfg.Discrete, mapping: cfg.Mapping, explore: cfg.Explore, every: max(1, cfg.ActEvery)}
	if cfg.Constraint != nil && cfg.Explore {
		if err := cfg.Constraint.Validate(); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		c, ok := ag.(agent.Constrained)
		if !ok {
			return nil, fmt.Errorf("train: a constraint for an agent (%T) that keeps no Lagrange multiplier", ag)
		}
		p.constrained, p.constraint = c, *cfg.Constraint
	}
	n := gym.ActDim
	if cfg.Discrete {
		n = int(gym.Moves)
	}
	p.act = make([]float64, n)
	return loop(ctx, env, p, cfg)
}

// Recommend runs rec as the policy of env, as a MultidimPodAutoscaler would
// with the default recommender: rec sees each step's metrics and sets the
// next allocation. rec keeps its state across episodes (its clock runs on),
// so later episodes see a recommender warmed on the earlier ones.
func Recommend(ctx context.Context, env gym.Env, rec recommender.Recommender, step time.Duration, cfg Config) ([]Episode, error) {
	if step <= 0 {
		return nil, fmt.Errorf("train: step %s must be positive", step)
	}
	if env.ActionSpace().Dim() != gym.ActDim {
		return nil, fmt.Errorf("train: action space has %d dimensions, want %d", env.ActionSpace().Dim(), gym.ActDim)
	}
	return loop(ctx, env, &recommenderPolicy{rec: rec, step: step}, cfg)
}

func loop(ctx context.Context, env gym.Env, p policy, cfg Config) ([]Episode, error) {
	if cfg.Episodes < 1 {
		return nil, fmt.Errorf("train: episodes %d must be positive", cfg.Episodes)
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 100
	}
	target := make([]float64, gym.ActDim)
	out := make([]Episode, 0, cfg.Episodes)
	updates := 0
	var obs []float64
	var info gym.Info
	for ep := range cfg.Episodes {
		switch cur, ok := env.(Current); {
		case cfg.Continuous && ep > 0:
			// Going on from the last step of the last episode.
		case cfg.Continuous && ok:
			if obs, info, ok = cur.Current(); ok {
				break
			}
			fallthrough
		default:
			var err error
			if obs, info, err = env.Reset(ctx, cfg.Seed+uint64(ep)); err != nil {
				return out, fmt.Errorf("train: episode %d: reset: %w", ep, err)
			}
		}
		e := Episode{Index: ep}
		for step := 0; step < cfg.MaxSteps; step++ {
			legal := p.choose(target, obs, info)
			next, r, term, trunc, nextInfo, err := env.Step(ctx, target)
			if err != nil {
				return out, fmt.Errorf("train: episode %d step %d: %w", ep, step, err)
			}
			if !legal {
				r -= gym.IllegalPenalty
				e.Illegal++
			}
			done := term || trunc || step == cfg.MaxSteps-1
			learnt := r
			if s, ok := p.(shaper); ok {
				learnt = s.shape(r, nextInfo.SLOViolated)
			}
			if updates, err = p.learn(obs, learnt, next, term); err != nil {
				return out, fmt.Errorf("train: episode %d step %d: update: %w", ep, step, err)
			}
			if cfg.Observe != nil {
				cfg.Observe(ep, step, nextInfo)
			}
			cu, mu := gym.Utilization(nextInfo.Metrics)
			e.Reward += r
			e.CPUUtil += cu
			e.MemoryUtil += mu
			e.Replicas += float64(nextInfo.Metrics.Replicas)
			e.CPU += nextInfo.Metrics.CPULimit
			e.Memory += nextInfo.Metrics.MemoryLimit
			if nextInfo.SLOViolated {
				e.SLOViolations++
			}
			e.Steps++
			obs, info = next, nextInfo
			if done {
				break
			}
		}
		if e.Steps == 0 {
			return out, errors.New("train: an episode had no steps")
		}
		e.CPUUtil /= float64(e.Steps)
		e.MemoryUtil /= float64(e.Steps)
		e.Replicas /= float64(e.Steps)
		e.CPU /= float64(e.Steps)
		e.Memory /= float64(e.Steps)
		if w, ok := p.(windowed); ok && (!cfg.Continuous || ep == cfg.Episodes-1) {
			// A window cut by a reset (or the run's end) ends here.
			n, err := w.closeWindow()
			if err != nil {
				return out, fmt.Errorf("train: episode %d: update: %w", ep, err)
			}
			if n >= 0 {
				updates = n
			}
		}
		if s, ok := p.(shaper); ok {
			if err := s.endEpisode(float64(e.SLOViolations) / float64(e.Steps)); err != nil {
				return out, fmt.Errorf("train: episode %d: %w", ep, err)
			}
		}
		e.Updates = updates
		out = append(out, e)
		if cfg.Progress != nil {
			cfg.Progress(e)
		}
	}
	return out, nil
}

type agentPolicy struct {
	ag       agent.Agent
	bounds   gym.Bounds
	discrete bool
	mapping  gym.Mapping
	explore  bool
	act      []float64
	updates  int
	updated  bool              // the last learn call trained the agent
	task     int               // the transitions' Task
	every    int               // the agent acts at every every-th step (Config.ActEvery)
	chosen   int               // steps chosen in this window count (Config.ActEvery)
	held     bool              // this step holds the allocation in force
	win      *agent.Transition // the open window's transition (Config.ActEvery)
	// constrained is the agent when it trains under constraint
	// (Config.Constraint), nil otherwise.
	constrained agent.Constrained
	constraint  agent.Lagrangian
}

// shaper is a policy that learns from a reward other than the one the
// episode reports (a constrained agent's, penalised by its multiplier).
type shaper interface {
	shape(r float64, violated bool) float64
	endEpisode(meanCost float64) error
}

func (p *agentPolicy) shape(r float64, violated bool) float64 {
	if p.constrained == nil || !violated {
		return r
	}
	return agent.Shape(r, p.constrained.Multiplier(), 1)
}

func (p *agentPolicy) endEpisode(meanCost float64) error {
	if p.constrained == nil {
		return nil
	}
	return p.constrained.SetMultiplier(p.constraint.Update(p.constrained.Multiplier(), meanCost))
}

// windowed is a policy whose transitions span several steps: a window an
// episode's end cuts (a reset follows, or the run ends) is closed there.
type windowed interface {
	// closeWindow learns the open window's transition, if any, and
	// starts the window count again; it returns the update count (−1:
	// no window was open).
	closeWindow() (int, error)
}

func (p *agentPolicy) choose(target, obs []float64, info gym.Info) bool {
	p.held = p.every > 1 && p.chosen%p.every != 0
	p.chosen++
	if p.held {
		info.Metrics.Allocation().Vector(target)
		return true
	}
	p.ag.Act(p.act, obs, p.explore)
	if !p.discrete {
		p.mapping.Target(target, p.act, info.Metrics.Allocation(), p.bounds)
		return true
	}
	next, legal := gym.Apply(gym.Move(argmax(p.act)), info.Metrics.Allocation(), p.bounds)
	next.Vector(target)
	return legal
}

func (p *agentPolicy) learn(obs []float64, r float64, next []float64, term bool) (int, error) {
	if !p.explore {
		return p.updates, nil
	}
	if p.every <= 1 {
		return p.observe(agent.Transition{State: obs, Action: p.act, Reward: r, Next: next, Done: term, Task: p.task})
	}
	if !p.held {
		p.win = &agent.Transition{State: slices.Clone(obs), Action: slices.Clone(p.act), Task: p.task}
	}
	if p.win == nil {
		return p.updates, nil // held from before a window opened
	}
	p.win.Reward, p.win.Next, p.win.Done = r, slices.Clone(next), term
	if p.chosen%p.every != 0 && !term {
		return p.updates, nil // the window goes on
	}
	t := *p.win
	p.win = nil
	return p.observe(t)
}

func (p *agentPolicy) observe(t agent.Transition) (int, error) {
	p.ag.Observe(t)
	st, err := p.ag.Update()
	p.updates, p.updated = st.Updates, st.Updated
	return p.updates, err
}

func (p *agentPolicy) closeWindow() (int, error) {
	p.chosen = 0
	if p.win == nil || !p.explore {
		p.win = nil
		return -1, nil
	}
	t := *p.win
	p.win = nil
	return p.observe(t)
}

type recommenderPolicy struct {
	rec  recommender.Recommender
	step time.Duration
	now  time.Duration
}

func (p *recommenderPolicy) choose(target, _ []float64, info gym.Info) bool {
	p.now += p.step
	m := info.Metrics
	a := p.rec.Recommend(baselines.Observe(p.now, m.Allocation(), m))
	gym.Allocation{Replicas: a.Replicas, CPU: a.CPU, Memory: a.Memory}.Vector(target)
	return true
}

func (p *recommenderPolicy) learn([]float64, float64, []float64, bool) (int, error) { return 0, nil }

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
