// Package serving is the serving study (paper §5.3): an agent that has
// converged on an application serves it, frozen, and then one of the
// instability scenarios hits (a payload grows, the load drops or
// quadruples). AWARE's retraining detector (Algorithm 1: SERVING → ONLINE
// when the trailing mean reward falls below the serving threshold or
// varies above the variance threshold, back to SERVING once it converges
// again) retrains the agent; the arms beside it are the same agent never
// retrained, the tuned rule-based autoscaler, and a policy converged on
// the changed application. It measures utilisation, SLO violations and
// reward after the switch, the episodes AWARE spent retraining, and the
// reward around the switch.
package serving

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Name is the study's.
const Name = "serving"

// The arms, in table order.
const (
	AWARE     = "AWARE"
	NoRetrain = "no-retraining"
	Rule      = "rule-based"
	Converged = "converged"
)

// Arms are the study's arms in table order.
var Arms = []string{AWARE, NoRetrain, Rule, Converged}

// Config is the study's size.
type Config struct {
	// Apps is the number of test-split applications drawn for each
	// scenario among those it affects.
	Apps int
	// Scenarios are the instability scenarios (names; all when empty).
	Scenarios []string
	// Converged is the episodes each converged policy trains from
	// scratch (on the application, and on it under each scenario).
	Converged int
	// Before and After are the episodes served before the scenario hits
	// and after.
	Before, After int
	// Window, ServingTolerance and VarianceTolerance are the retraining
	// detector's thresholds: the trailing Window episodes' mean reward at
	// least (1 − ServingTolerance)·|converged reward| below it, and their
	// standard deviation at most VarianceTolerance·|converged reward|.
	Window            int
	ServingTolerance  float64
	VarianceTolerance float64
	Seed              uint64
	// EpisodeSteps are the steps of an episode (0: the simulator's 100).
	EpisodeSteps int `json:",omitempty"`
	// Testbed, when set, runs its arms on the testbed too (OnTestbed).
	Testbed *Testbed `json:",omitempty"`
}

// Quick is a run of a few minutes on 2 cores: 3 applications under every
// scenario, 5 episodes before and 40 after, policies converged for 300
// episodes (the characterisation's, which draws the same applications).
func Quick() Config {
	return Config{Apps: 3, Converged: 300, Before: 5, After: 40, Window: 5, ServingTolerance: 0.1, VarianceTolerance: 0.1, Seed: 1}
}

// Full is 10 applications under every scenario, 10 episodes before and
// 100 after, policies converged for 600 episodes.
func Full() Config {
	return Config{Apps: 10, Converged: 600, Before: 10, After: 100, Window: 5, ServingTolerance: 0.1, VarianceTolerance: 0.1, Seed: 1}
}

// Validate refuses sizes that cannot run.
func (c Config) Validate() error {
	if c.Apps < 1 || c.Converged < 1 || c.Before < 1 || c.After < c.Window || c.Window < 1 || !(c.ServingTolerance >= 0) || !(c.VarianceTolerance > 0) {
		return fmt.Errorf("serving: %d applications, %d converged episodes, %d episodes before and the window %d must be positive, %d after at least the window, tolerances %v (not negative) and %v (positive)",
			c.Apps, c.Converged, c.Before, c.Window, c.After, c.ServingTolerance, c.VarianceTolerance)
	}
	for _, s := range c.Scenarios {
		if _, err := sim.ParseScenario(s); err != nil {
			return fmt.Errorf("serving: %w", err)
		}
	}
	if c.EpisodeSteps < 0 {
		return fmt.Errorf("serving: episodes of %d steps", c.EpisodeSteps)
	}
	if c.Testbed != nil {
		if err := c.Testbed.Clock.Validate(); err != nil {
			return fmt.Errorf("serving: %w", err)
		}
		if c.EpisodeSteps < 1 {
			return fmt.Errorf("serving: on the testbed the episodes' steps must be set (OnTestbed)")
		}
		for _, arm := range c.Testbed.Arms {
			if !slices.Contains(TestbedArms, arm) {
				return fmt.Errorf("serving: arm %s does not run on the testbed (it runs %v)", arm, TestbedArms)
			}
		}
	}
	return nil
}

// envOptions are the simulator's options of the study's episodes.
func (c Config) envOptions() []sim.Option {
	if c.EpisodeSteps > 0 {
		return []sim.Option{sim.WithEpisode(c.EpisodeSteps)}
	}
	return nil
}

// thresholds are the retraining detector's for a policy of reference
// reward ref: the trailing Window episodes' mean below
// (1 − ServingTolerance)·|ref| or their spread above
// VarianceTolerance·|ref| (each at least 1e-9: a threshold of 0 is the
// controller's default). Online is never used (the agent starts SERVING)
// but must lie within an episode's rewards.
func (c Config) thresholds(ref float64) v1alpha1.RewardThresholds {
	return v1alpha1.RewardThresholds{Online: 1e-3, Window: c.Window,
		Serving:  max(ref-c.ServingTolerance*abs(ref), 1e-9),
		Variance: max(c.VarianceTolerance*abs(ref), 1e-9)}
}

// frozen are thresholds a served policy never crosses: a mean reward
// below 1e-9 or a spread above the largest reward an episode has.
func (c Config) frozen() v1alpha1.RewardThresholds {
	steps := c.EpisodeSteps
	if steps == 0 {
		steps = v1alpha1.DefaultEpisodeLength
	}
	return v1alpha1.RewardThresholds{Online: 1e-3, Window: c.Window, Serving: 1e-9, Variance: v1alpha1.MaxStepReward * float64(steps)}
}

// never are thresholds an agent in ONLINE never meets (the rule-based
// arm's MPA, whose built-in recommender acts in every stage, stays there):
// a window of episodes at the largest reward there is that vary by less
// than 1e-9.
func (c Config) never() v1alpha1.RewardThresholds {
	steps := c.EpisodeSteps
	if steps == 0 {
		steps = v1alpha1.DefaultEpisodeLength
	}
	return v1alpha1.RewardThresholds{Online: 1e-3, Window: c.Window, Serving: v1alpha1.MaxStepReward * float64(steps), Variance: 1e-9}
}

// profile is AWARE's agent profile for a policy of reference reward ref:
// it starts SERVING and retrains on the detector's thresholds.
func (c Config) profile(ref float64) v1alpha1.AgentProfile {
	return v1alpha1.AgentProfile{Thresholds: c.thresholds(ref), Bootstrap: ptr(false), StartServing: true, EpisodeLength: c.EpisodeSteps}
}

func (c Config) scenarios() []string {
	if len(c.Scenarios) > 0 {
		return c.Scenarios
	}
	return lab.ScenarioNames()
}

// Unit is an application under a scenario that changes it.
type Unit = lab.Affected

// Draw draws, for each scenario, up to Apps test-split applications that
// it affects (a payload scenario only applications with a segment it
// resizes), from (Seed, scenario).
func (c Config) Draw(l *lab.Lab) ([]Unit, error) {
	return l.DrawAffectedUnits(generator.SplitTest, c.scenarios(), c.Apps, c.Seed)
}

// Plan is every (application, scenario, arm) cell.
func Plan(c Config, units []Unit) study.Plan {
	var p study.Plan
	for _, u := range units {
		for _, arm := range Arms {
			p = append(p, study.Cell{Arm: arm, App: u.App, Scenario: u.Scenario, Seed: c.Seed})
		}
	}
	return p
}

// Run is one cell's outcome: every served episode's figures, the scenario
// hitting at episode Before.
type Run struct {
	lab.Curve
	// Stages are AWARE's stage in each episode (SERVING or ONLINE).
	Stages []string `json:"stages,omitempty"`
	// Reference is the converged policy's greedy reward on the unchanged
	// application, the detector's thresholds are relative to.
	Reference float64 `json:"referenceReward"`
	Seconds   float64 `json:"seconds"`
}

// Retraining is the number of episodes AWARE trained in.
func (r Run) Retraining() int {
	n := 0
	for _, s := range r.Stages {
		if s == string(v1alpha1.StageOnline) {
			n++
		}
	}
	return n
}

// Runner runs the cells.
type Runner struct {
	Lab      *lab.Lab
	Policies *lab.Policies
	Config   Config
}

// Cell runs one cell.
func (r *Runner) Cell(ctx context.Context, c study.Cell) (Run, error) {
	cfg, l := r.Config, r.Lab
	sc, err := sim.ParseScenario(c.Scenario)
	if err != nil {
		return Run{}, err
	}
	ref, ag, err := r.converged(ctx, c.App, c.Seed)
	if err != nil {
		return Run{}, err
	}
	start := time.Now()
	out := Run{Reference: ref}
	env, err := l.Env(c.App, 0, cfg.envOptions()...)
	if err != nil {
		return Run{}, err
	}
	seed := c.Seed + 77_000
	n := cfg.Before + cfg.After
	hit := cfg.hitter(env, sc)
	switch c.Arm {
	case Rule:
		rec, err := l.NewRuleBased(ctx, env, c.App)
		if err != nil {
			return Run{}, err
		}
		for i := range n {
			if err := hit(i); err != nil {
				return Run{}, err
			}
			eps, err := l.Recommend(ctx, env, rec, 1, seed+uint64(i), nil)
			if err != nil {
				return Run{}, err
			}
			out.Add(eps...)
		}
	case NoRetrain, Converged, AWARE:
		run, err := r.agentArm(ctx, c, env, hit, ref, ag, asRun{})
		if err != nil {
			return Run{}, err
		}
		run.Reference = out.Reference
		out = run
	default:
		return Run{}, fmt.Errorf("serving: unknown arm %q", c.Arm)
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// hitter injects the scenario into env before episode Before.
func (c Config) hitter(env *sim.AppEnv, sc sim.Scenario) func(int) error {
	return func(i int) error {
		if i == c.Before {
			return env.Cluster().Inject(0, sc)
		}
		return nil
	}
}

// asRun is how the simulator runs an agent arm: as the study does (the
// zero value: the agent acts at every step, every episode reset), or as
// the testbed runs it (every: the agent acts at every every-th step;
// continuous: the episodes are windows of one running service).
type asRun struct {
	every      int
	continuous bool
}

// agentArm runs one of the agent arms (AWARE, no-retraining, converged)
// on env from the converged policy ag of reference reward ref, hit
// injecting the scenario before the episode it is given.
func (r *Runner) agentArm(ctx context.Context, c study.Cell, env *sim.AppEnv, hit func(int) error, ref float64, ag agent.Agent, as asRun) (Run, error) {
	cfg := r.Config
	seed := c.Seed + 77_000
	m := r.Lab.Config().Mapping
	var out Run
	policy := ag
	prof := cfg.profile(ref)
	prof.Default()
	stage := autoscaler.NextStage(v1alpha1.StageInitialized, prof, nil)
	for i := range cfg.Before + cfg.After {
		if err := hit(i); err != nil {
			return Run{}, err
		}
		if c.Arm == Converged && i == cfg.Before {
			// From the switch on, the policy converged on the changed application.
			var err error
			if _, policy, err = r.Policies.Get(ctx, lab.Policy{App: c.App, Scenario: c.Scenario, Seed: c.Seed, Episodes: cfg.Converged}); err != nil {
				return Run{}, err
			}
		}
		learn := c.Arm == AWARE && stage == v1alpha1.StageOnline
		eps, err := train.Run(ctx, env, policy, train.Config{Episodes: 1, Seed: seed + uint64(i), Explore: learn, Mapping: m,
			ActEvery: as.every, Continuous: as.continuous})
		if err != nil {
			return Run{}, err
		}
		out.Add(eps...)
		if c.Arm == AWARE {
			out.Stages = append(out.Stages, string(stage))
			stage = autoscaler.NextStage(stage, prof, out.Rewards)
		}
	}
	return out, nil
}

// converged is the policy converged on app (lab.Policies) and its
// reference reward, the detector's thresholds are relative to: its greedy
// reward per episode on the unchanged application, scored again over
// episodes of EpisodeSteps when they are not the simulator's.
func (r *Runner) converged(ctx context.Context, app string, seed uint64) (float64, agent.Agent, error) {
	cfg, l := r.Config, r.Lab
	tr, ag, err := r.Policies.Get(ctx, lab.Policy{App: app, Seed: seed, Episodes: cfg.Converged})
	if err != nil {
		return 0, nil, err
	}
	if cfg.EpisodeSteps == 0 {
		return tr.Greedy.Reward, ag, nil
	}
	env, err := l.Env(app, 0, cfg.envOptions()...)
	if err != nil {
		return 0, nil, err
	}
	s, err := lab.Score(ctx, env, ag, l.Config().Mapping, train.EvalSeed(seed), lab.GreedyEpisodes)
	if err != nil {
		return 0, nil, fmt.Errorf("serving: %s's reference at %d-step episodes: %w", app, cfg.EpisodeSteps, err)
	}
	return s.Reward, ag, nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// Cost is the single-core time of the whole study at lab.Pace.
func (c Config) Cost(units []Unit) time.Duration {
	p := lab.Pace
	apps := map[string]bool{}
	for _, u := range units {
		apps[u.App] = true
	}
	n := time.Duration(c.Before + c.After)
	cost := time.Duration((len(apps)+len(units))*c.Converged)*p.DDPG + time.Duration(len(units))*(n*p.DDPG+3*n*p.Rule) + time.Duration(len(apps))*p.Tune
	if c.Testbed != nil {
		// The agent arms again at the testbed's cadence (atCadence); the
		// testbed's own wall time is the clock's, not a core's.
		cost += time.Duration(len(units)) * 2 * n * p.DDPG
	}
	return cost
}

// Execute runs the study (the cells not done yet) and reports it.
func Execute(ctx context.Context, o lab.Run, c Config) (study.Report, error) {
	if err := c.Validate(); err != nil {
		return study.Report{}, err
	}
	units, err := c.Draw(o.Lab)
	if err != nil {
		return study.Report{}, err
	}
	plan := Plan(c, units)
	r := &Runner{Lab: o.Lab, Policies: o.Policies, Config: c}
	var tb map[[2]string]testbedrun.Result
	if c.Testbed != nil && !o.RenderOnly {
		// The testbed first, alone on the machine: its rounds are timed
		// (unless the suite ran this study's part with others' already).
		part, err := r.testbedPart(ctx, o, units)
		if err != nil {
			return study.Report{}, err
		}
		if err := lab.RunTestbed(ctx, o, part); err != nil {
			return study.Report{}, err
		}
		if tb, err = r.testbedResults(o.Dir, units); err != nil {
			return study.Report{}, err
		}
	}
	rep, err := lab.Execute(ctx, o, Name, c, c.Seed, plan, r.Cell, func(dir string, runs []Run) (study.Report, error) {
		rep, err := Render(c, plan, runs, o.Lab.TracesOf(plan.Apps()), o.Bootstrap, dir)
		if err != nil || c.Testbed == nil {
			return rep, err
		}
		if tb == nil {
			if tb, err = r.testbedResults(dir, units); err != nil {
				return rep, err
			}
		}
		outs, err := Outcomes(c, plan, runs)
		if err != nil {
			return rep, err
		}
		cad, err := r.atCadence(ctx, dir, o.RenderOnly, units, tb)
		if err != nil {
			return rep, err
		}
		return rep, testbedReport(&rep, c, plan, runs, outs, tb, cad, o.Bootstrap)
	})
	if err == nil && tb != nil {
		// The report is written; its testbed figures must be the system's
		// every round.
		err = lab.CheckComplete(Name, tb, c.Testbed.Clock.Speedup)
	}
	return rep, err
}

// Estimate is the study's single-core time in l (Cost of its draw).
func (c Config) Estimate(l *lab.Lab) (time.Duration, error) {
	units, err := c.Draw(l)
	if err != nil {
		return 0, err
	}
	return c.Cost(units), nil
}
