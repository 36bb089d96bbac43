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
	"time"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
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
	return nil
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
	base := lab.Policy{App: c.App, Seed: c.Seed, Episodes: cfg.Converged}
	tr, ag, err := r.Policies.Get(ctx, base)
	if err != nil {
		return Run{}, err
	}
	start := time.Now()
	out := Run{Reference: tr.Greedy.Reward}
	env, err := l.Env(c.App, 0)
	if err != nil {
		return Run{}, err
	}
	seed := c.Seed + 77_000
	n := cfg.Before + cfg.After
	m := l.Config().Mapping
	// hit injects the scenario before episode Before.
	hit := func(i int) error {
		if i == cfg.Before {
			return env.Cluster().Inject(0, sc)
		}
		return nil
	}
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
		policy := ag
		prof := v1alpha1.AgentProfile{Thresholds: v1alpha1.RewardThresholds{Window: cfg.Window,
			Serving:  tr.Greedy.Reward - cfg.ServingTolerance*abs(tr.Greedy.Reward),
			Variance: cfg.VarianceTolerance * abs(tr.Greedy.Reward)}}
		stage := v1alpha1.StageServing
		for i := range n {
			if err := hit(i); err != nil {
				return Run{}, err
			}
			if c.Arm == Converged && i == cfg.Before {
				// From the switch on, the policy converged on the changed application.
				if _, policy, err = r.Policies.Get(ctx, lab.Policy{App: c.App, Scenario: c.Scenario, Seed: c.Seed, Episodes: cfg.Converged}); err != nil {
					return Run{}, err
				}
			}
			learn := c.Arm == AWARE && stage == v1alpha1.StageOnline
			eps, err := train.Run(ctx, env, policy, train.Config{Episodes: 1, Seed: seed + uint64(i), Explore: learn, Mapping: m})
			if err != nil {
				return Run{}, err
			}
			out.Add(eps...)
			if c.Arm == AWARE {
				out.Stages = append(out.Stages, string(stage))
				stage = autoscaler.NextStage(stage, prof, out.Rewards)
			}
		}
	default:
		return Run{}, fmt.Errorf("serving: unknown arm %q", c.Arm)
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
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
	return time.Duration((len(apps)+len(units))*c.Converged)*p.DDPG + time.Duration(len(units))*(n*p.DDPG+3*n*p.Rule) + time.Duration(len(apps))*p.Tune
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
	return lab.Execute(ctx, o, Name, c, c.Seed, plan, r.Cell, func(dir string, runs []Run) (study.Report, error) {
		return Render(c, plan, runs, o.Lab.TracesOf(plan.Apps()), o.Bootstrap, dir)
	})
}

// Estimate is the study's single-core time in l (Cost of its draw).
func (c Config) Estimate(l *lab.Lab) (time.Duration, error) {
	units, err := c.Draw(l)
	if err != nil {
		return 0, err
	}
	return c.Cost(units), nil
}
