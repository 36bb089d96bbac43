// Package characterisation is the study of why RL autoscalers need
// AWARE (paper §2.3): how much reward a converged policy loses, and how
// many episodes it needs to re-converge, when (a) it is moved to a new
// application and keeps training there (transfer learning), and (b) one of
// the instability scenarios hits the application it converged on; and
// (c) how an agent training from scratch does in its first episodes
// against the tuned rule-based autoscaler.
package characterisation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Name is the study's.
const Name = "characterisation"

// The kinds of cell.
const (
	// NewApp is a policy converged on one application moved to another.
	NewApp = "new-app"
	// Scenario is a converged policy under an instability scenario.
	Scenario = "scenario"
	// EarlyAgent is DDPG's first episodes from scratch; EarlyRule the
	// tuned rule-based autoscaler's same episodes.
	EarlyAgent = "early-ddpg"
	EarlyRule  = "early-rule-based"
)

// Config is the study's size.
type Config struct {
	// Apps are the test-split applications drawn for the new-application
	// and early-training parts (policy i moves to application i+1), and
	// the applications drawn for each scenario among those it affects.
	Apps int
	// Scenarios are the instability scenarios (all when empty).
	Scenarios []string
	// Converged is the episodes every converged policy trains from
	// scratch (the early-training part is its first Early).
	Converged, Early int
	// Episodes is the training budget after the change.
	Episodes int
	// Rule says when a policy has re-converged.
	Rule train.ConvergenceRule
	Seed uint64
}

// Quick is 3 applications (and 3 per scenario), converged policies of 300
// episodes, 60 episodes after the change, early training 60 episodes.
func Quick() Config {
	return Config{Apps: 3, Converged: 300, Early: 60, Episodes: 60, Rule: train.ConvergenceRule{Window: 5, Tolerance: 0.05}, Seed: 1}
}

// Full is 10 applications, converged policies of 600 episodes, 300
// episodes after the change, the first 400 episodes of training (the
// paper's window) against the rule-based autoscaler.
func Full() Config {
	return Config{Apps: 10, Converged: 600, Early: 400, Episodes: 300, Rule: train.ConvergenceRule{Window: 10, Tolerance: 0.05}, Seed: 1}
}

// Validate refuses sizes that cannot run.
func (c Config) Validate() error {
	if c.Apps < 2 || c.Converged < 1 || c.Early < 1 || c.Early > c.Converged || c.Episodes < c.Rule.Window || c.Rule.Window < 1 || !(c.Rule.Tolerance >= 0) {
		return fmt.Errorf("characterisation: %d applications (at least 2), %d converged episodes (positive, at least the %d early ones, positive), %d episodes after a change (at least the window %d, positive), tolerance %v (not negative)",
			c.Apps, c.Converged, c.Early, c.Episodes, c.Rule.Window, c.Rule.Tolerance)
	}
	for _, s := range c.Scenarios {
		if _, err := sim.ParseScenario(s); err != nil {
			return fmt.Errorf("characterisation: %w", err)
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

// Draw is the study's applications (policy i moves to application i+1,
// the last to the first) and its scenario units.
func (c Config) Draw(l *lab.Lab) ([]string, []lab.Affected, error) {
	apps, err := l.Draw(generator.SplitTest, c.Apps, rand.New(rand.NewPCG(c.Seed, 0xC4A)))
	if err != nil {
		return nil, nil, err
	}
	units, err := l.DrawAffectedUnits(generator.SplitTest, c.scenarios(), c.Apps, c.Seed)
	return apps, units, err
}

// Plan is every cell: a move to each application (Test: the index of the
// application moved from, from 1), each scenario unit, and the early
// training of each application.
func Plan(c Config, apps []string, units []lab.Affected) study.Plan {
	var p study.Plan
	for i := range apps {
		p = append(p, study.Cell{Arm: NewApp, App: apps[(i+1)%len(apps)], Test: i + 1, Seed: c.Seed})
	}
	for _, u := range units {
		p = append(p, study.Cell{Arm: Scenario, App: u.App, Scenario: u.Scenario, Seed: c.Seed})
	}
	for _, a := range apps {
		p = append(p, study.Cell{Arm: EarlyAgent, App: a, Seed: c.Seed}, study.Cell{Arm: EarlyRule, App: a, Seed: c.Seed})
	}
	return p
}

// Run is one cell's outcome.
type Run struct {
	lab.Curve
	// Before is the reward the policy earned before the change (its
	// greedy score where it converged); Target the converged reward on
	// the new application (new-app cells).
	Before  float64 `json:"rewardBefore,omitempty"`
	Target  float64 `json:"targetReward,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Runner runs the cells.
type Runner struct {
	Lab      *lab.Lab
	Policies *lab.Policies
	Config   Config
	Apps     []string
}

// Cell runs one cell.
func (r *Runner) Cell(ctx context.Context, c study.Cell) (Run, error) {
	cfg, l := r.Config, r.Lab
	seed := c.Seed + 99_000
	var out Run
	start := time.Now()
	switch c.Arm {
	case NewApp:
		if c.Test < 1 || c.Test > len(r.Apps) {
			return Run{}, fmt.Errorf("characterisation: no application %d to move from", c.Test)
		}
		from, ag, err := r.Policies.Get(ctx, lab.Policy{App: r.Apps[c.Test-1], Seed: c.Seed, Episodes: cfg.Converged})
		if err != nil {
			return Run{}, err
		}
		target, _, err := r.Policies.Get(ctx, lab.Policy{App: c.App, Seed: c.Seed, Episodes: cfg.Converged})
		if err != nil {
			return Run{}, err
		}
		out.Before, out.Target = from.Greedy.Reward, target.Greedy.Reward
		start = time.Now()
		if err := r.keepTraining(ctx, &out, ag, c.App, 0, seed); err != nil {
			return Run{}, err
		}
	case Scenario:
		sc, err := sim.ParseScenario(c.Scenario)
		if err != nil {
			return Run{}, err
		}
		from, ag, err := r.Policies.Get(ctx, lab.Policy{App: c.App, Seed: c.Seed, Episodes: cfg.Converged})
		if err != nil {
			return Run{}, err
		}
		out.Before = from.Greedy.Reward
		start = time.Now()
		if err := r.keepTraining(ctx, &out, ag, c.App, sc, seed); err != nil {
			return Run{}, err
		}
	case EarlyAgent:
		tr, _, err := r.Policies.Get(ctx, lab.Policy{App: c.App, Seed: c.Seed, Episodes: cfg.Converged})
		if err != nil {
			return Run{}, err
		}
		t := tr.Training
		out.Curve = lab.Curve{Rewards: t.Rewards[:cfg.Early], SLOViolations: t.SLOViolations[:cfg.Early], CPUUtil: t.CPUUtil[:cfg.Early], MemoryUtil: t.MemoryUtil[:cfg.Early]}
		out.Seconds = tr.Seconds * float64(cfg.Early) / float64(cfg.Converged)
		return out, nil
	case EarlyRule:
		env, err := l.Env(c.App, 0)
		if err != nil {
			return Run{}, err
		}
		// The seeds the policy's training episodes were reset with.
		eps, err := l.RuleBased(ctx, env, c.App, cfg.Early, c.Seed+lab.TrainingSeedOffset, nil)
		if err != nil {
			return Run{}, err
		}
		out.Add(eps...)
	default:
		return Run{}, fmt.Errorf("characterisation: unknown kind of cell %q", c.Arm)
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// keepTraining trains ag on app under sc (exploring) for the budget after
// a change, adding the episodes to out.
func (r *Runner) keepTraining(ctx context.Context, out *Run, ag agent.Agent, app string, sc sim.Scenario, seed uint64) error {
	env, err := r.Lab.Env(app, sc)
	if err != nil {
		return err
	}
	eps, err := train.Run(ctx, env, ag, train.Config{Episodes: r.Config.Episodes, Seed: seed, Explore: true, Mapping: r.Lab.Config().Mapping})
	if err != nil {
		return err
	}
	out.Add(eps...)
	return nil
}

// Cost is the single-core time of the whole study at lab.Pace.
func (c Config) Cost(apps []string, units []lab.Affected) time.Duration {
	p := lab.Pace
	distinct := map[string]bool{}
	for _, a := range apps {
		distinct[a] = true
	}
	for _, u := range units {
		distinct[u.App] = true
	}
	return time.Duration(len(distinct)*c.Converged)*p.DDPG + time.Duration((len(apps)+len(units))*c.Episodes)*p.DDPG +
		time.Duration(len(apps)*c.Early)*p.Rule + time.Duration(len(apps))*p.Tune
}

// Execute runs the study (the cells not done yet) and reports it.
func Execute(ctx context.Context, o lab.Run, c Config) (study.Report, error) {
	if err := c.Validate(); err != nil {
		return study.Report{}, err
	}
	apps, units, err := c.Draw(o.Lab)
	if err != nil {
		return study.Report{}, err
	}
	plan := Plan(c, apps, units)
	r := &Runner{Lab: o.Lab, Policies: o.Policies, Config: c, Apps: apps}
	return lab.Execute(ctx, o, Name, c, c.Seed, plan, r.Cell, func(dir string, runs []Run) (study.Report, error) {
		return Render(c, plan, runs, o.Lab.TracesOf(plan.Apps()), o.Bootstrap, dir)
	})
}

// Estimate is the study's single-core time in l (Cost of its draw).
func (c Config) Estimate(l *lab.Lab) (time.Duration, error) {
	apps, units, err := c.Draw(l)
	if err != nil {
		return 0, err
	}
	return c.Cost(apps, units), nil
}
