// Package alpha is the study of what the reward's weight buys: DDPG
// trained with the SLO's weight α ∈ {0.3, 0.5, 0.7, 0.9} in the reward
// (the paper's α = 0.5 pays for utilisation with SLO violations), and DDPG
// trained at α = 0.5 under a Lagrangian constraint on its SLO violations
// (a budget of the tuned HPA+VPA's share of violating steps on the same
// application), each held against the tuned rule-based autoscaler on the
// same held-out episodes: utilisation, violations and the win rule (at
// least its reward and at most its violations, or at least 20 % more
// CPU+memory utilisation at at most its violations).
package alpha

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Name is the study's.
const Name = "alpha"

// The arms besides the α ones (alphaArm).
const (
	// Constrained is DDPG at α = 0.5 under the Lagrangian constraint.
	Constrained = "DDPG-lagrangian"
	Rule        = "rule-based"
)

// alphaArm is the arm of DDPG trained with α.
func alphaArm(a float64) string { return "DDPG-a" + strconv.FormatFloat(a, 'f', -1, 64) }

// parseAlpha is alphaArm's α, false for another arm.
func parseAlpha(arm string) (float64, bool) {
	s, ok := strings.CutPrefix(arm, "DDPG-a")
	if !ok {
		return 0, false
	}
	a, err := strconv.ParseFloat(s, 64)
	return a, err == nil
}

// Config is the study's size.
type Config struct {
	// Apps are the test-split applications drawn.
	Apps int
	// Alphas are the reward weights of the α arms.
	Alphas []float64
	// Episodes is every agent's training budget; Eval the held-out
	// greedy episodes every arm is scored on (at α = 0.5).
	Episodes, Eval int
	// Calibration is the rule-based episodes (the agents' first training
	// episodes) whose share of violating steps is the constrained agent's
	// budget, at least BudgetFloor.
	Calibration int
	BudgetFloor float64
	// LR and Max are the Lagrange multiplier's step and bound
	// (agent.Lagrangian).
	LR, Max float64
	Seed    uint64
}

// Quick is 4 applications, agents trained 300 episodes (the policies
// characterisation and serving train, shared), 10 held-out episodes.
func Quick() Config {
	return Config{Apps: 4, Alphas: []float64{0.3, 0.5, 0.7, 0.9}, Episodes: 300, Eval: 10, Calibration: 10, BudgetFloor: 0.005, LR: 2, Max: 10, Seed: 1}
}

// Full is 20 applications, agents trained 1000 episodes (about what DDPG
// needs to converge on these applications), 20 held-out episodes.
func Full() Config {
	return Config{Apps: 20, Alphas: []float64{0.3, 0.5, 0.7, 0.9}, Episodes: 1000, Eval: 20, Calibration: 20, BudgetFloor: 0.005, LR: 2, Max: 10, Seed: 1}
}

// Validate refuses sizes that cannot run.
func (c Config) Validate() error {
	if c.Apps < 2 || c.Episodes < 1 || c.Eval < 1 || c.Calibration < 1 || len(c.Alphas) == 0 {
		return fmt.Errorf("alpha: %d applications (at least 2), %d training, %d held-out and %d calibration episodes must be positive, and at least one α (%v)",
			c.Apps, c.Episodes, c.Eval, c.Calibration, c.Alphas)
	}
	seen := map[string]bool{}
	for _, a := range c.Alphas {
		if !(a >= 0 && a <= 1) || seen[alphaArm(a)] {
			return fmt.Errorf("alpha: α %v must lie in [0, 1], once", a)
		}
		seen[alphaArm(a)] = true
	}
	if err := c.constraint(c.BudgetFloor).Validate(); err != nil {
		return fmt.Errorf("alpha: %w", err)
	}
	return nil
}

// constraint is the Lagrangian of a budget.
func (c Config) constraint(budget float64) agent.Lagrangian {
	return agent.Lagrangian{Budget: budget, LR: c.LR, Max: c.Max}
}

// Arms are the study's arms in table order.
func (c Config) Arms() []string {
	var out []string
	for _, a := range c.Alphas {
		out = append(out, alphaArm(a))
	}
	return append(out, Constrained, Rule)
}

// Agents are the arms that learn.
func (c Config) Agents() []string {
	arms := c.Arms()
	return arms[:len(arms)-1]
}

// Plan is every (application, arm) cell.
func Plan(c Config, apps []string) study.Plan { return lab.AppArmPlan(apps, c.Arms(), c.Seed) }

// Run is one cell's outcome: its agent's training (the rule-based arm
// has none) and the held-out episodes' figures.
type Run struct {
	Training lab.Curve `json:"training"`
	Eval     lab.Curve `json:"eval"`
	// Budget and Lambda are the constrained agent's budget (a share of
	// violating steps) and its multiplier after training.
	Budget  float64 `json:"budget,omitempty"`
	Lambda  float64 `json:"lambda,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Runner runs the cells.
type Runner struct {
	Lab      *lab.Lab
	Policies *lab.Policies
	Config   Config
}

// Cell runs one cell: trains the arm's agent (or takes the shared policy
// of α = 0.5), then scores it greedily on the held-out episodes at
// α = 0.5, where the rule-based arm runs the same episodes.
func (r *Runner) Cell(ctx context.Context, c study.Cell) (Run, error) {
	cfg, l := r.Config, r.Lab
	start := time.Now()
	var out Run
	var ag *ddpg.Agent
	switch a, isAlpha := parseAlpha(c.Arm); {
	case c.Arm == Rule:
		env, err := l.Env(c.App, 0)
		if err != nil {
			return Run{}, err
		}
		eps, err := l.RuleBased(ctx, env, c.App, cfg.Eval, train.EvalSeed(c.Seed), nil)
		if err != nil {
			return Run{}, err
		}
		out.Eval.Add(eps...)
		out.Seconds = time.Since(start).Seconds()
		return out, nil
	case isAlpha && a == gym.DefaultAlpha:
		// The policy characterisation and serving train: shared.
		tr, shared, err := r.Policies.Get(ctx, lab.Policy{App: c.App, Seed: c.Seed, Episodes: cfg.Episodes})
		if err != nil {
			return Run{}, err
		}
		out.Training, ag = tr.Training, shared
	case isAlpha:
		var err error
		if ag, err = r.train(ctx, &out, c, a, nil); err != nil {
			return Run{}, err
		}
	case c.Arm == Constrained:
		budget, err := r.budget(ctx, c)
		if err != nil {
			return Run{}, err
		}
		lag := cfg.constraint(budget)
		if ag, err = r.train(ctx, &out, c, gym.DefaultAlpha, &lag); err != nil {
			return Run{}, err
		}
		out.Budget, out.Lambda = budget, ag.Multiplier()
	default:
		return Run{}, fmt.Errorf("alpha: unknown arm %q", c.Arm)
	}
	env, err := l.Env(c.App, 0)
	if err != nil {
		return Run{}, err
	}
	eps, err := train.Run(ctx, env, ag, train.Config{Episodes: cfg.Eval, Seed: train.EvalSeed(c.Seed), Mapping: l.Config().Mapping})
	if err != nil {
		return Run{}, err
	}
	out.Eval.Add(eps...)
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// train trains a fresh DDPG agent on cell c's application with reward
// weight a (under constraint lag when set), from the seeds the shared
// policies train from (lab.Policies), adding its episodes to out.
func (r *Runner) train(ctx context.Context, out *Run, c study.Cell, a float64, lag *agent.Lagrangian) (*ddpg.Agent, error) {
	l := r.Lab
	env, err := l.Env(c.App, 0, sim.WithAlpha(a))
	if err != nil {
		return nil, err
	}
	ag, err := l.NewDDPG(env.ObservationSpace().Dim(), c.Seed)
	if err != nil {
		return nil, err
	}
	eps, err := train.Run(ctx, env, ag, train.Config{Episodes: r.Config.Episodes, Seed: c.Seed + lab.TrainingSeedOffset, Explore: true, Mapping: l.Config().Mapping, Constraint: lag})
	if err != nil {
		return nil, fmt.Errorf("alpha: %s: %w", c.Key(), err)
	}
	out.Training.Add(eps...)
	return ag, nil
}

// budget is the constrained agent's budget on cell c's application: the
// tuned rule-based autoscaler's share of violating steps over the first
// Calibration episodes the agent trains on (never the held-out ones), at
// least BudgetFloor.
func (r *Runner) budget(ctx context.Context, c study.Cell) (float64, error) {
	env, err := r.Lab.Env(c.App, 0)
	if err != nil {
		return 0, err
	}
	eps, err := r.Lab.RuleBased(ctx, env, c.App, r.Config.Calibration, c.Seed+lab.TrainingSeedOffset, nil)
	if err != nil {
		return 0, err
	}
	var v, n int
	for _, e := range eps {
		v += e.SLOViolations
		n += e.Steps
	}
	return math.Max(r.Config.BudgetFloor, float64(v)/float64(n)), nil
}

// Draw is the study's applications.
func (c Config) Draw(l *lab.Lab) ([]string, error) {
	return l.Draw(generator.SplitTest, c.Apps, rand.New(rand.NewPCG(c.Seed, 0xA1FA)))
}

// Cost is the single-core time of the study at lab.Pace: every agent's
// training (α = 0.5's counted, though another study may have trained it)
// and the held-out and calibration episodes.
func (c Config) Cost(apps []string) time.Duration {
	p := lab.Pace
	agents := len(c.Alphas) + 1
	return time.Duration(len(apps)) * (time.Duration(agents*c.Episodes)*p.DDPG + time.Duration(agents*c.Eval+c.Eval+c.Calibration)*p.Rule + p.Tune)
}

// Estimate is the study's single-core time in l.
func (c Config) Estimate(l *lab.Lab) (time.Duration, error) {
	apps, err := c.Draw(l)
	if err != nil {
		return 0, err
	}
	return c.Cost(apps), nil
}

// Execute runs the study (the cells not done yet) and reports it.
func Execute(ctx context.Context, o lab.Run, c Config) (study.Report, error) {
	if err := c.Validate(); err != nil {
		return study.Report{}, err
	}
	apps, err := c.Draw(o.Lab)
	if err != nil {
		return study.Report{}, err
	}
	plan := Plan(c, apps)
	r := &Runner{Lab: o.Lab, Policies: o.Policies, Config: c}
	return lab.Execute(ctx, o, Name, c, c.Seed, plan, r.Cell, func(dir string, runs []Run) (study.Report, error) {
		return Render(c, plan, runs, o.Lab.TracesOf(apps), o.Bootstrap, dir)
	})
}
