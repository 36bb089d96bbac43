// Package bootstrapping is the bootstrapping study (paper §5.4): the
// first episodes of a new application's life. AWARE with bootstrapping
// keeps the tuned rule-based autoscaler in charge for the first episodes
// (the OFFLINE stage), records every step, trains a BCQ agent on the
// records alone and then lets it act and train online; without
// bootstrapping a fresh DDPG agent acts from the first step. The tuned
// rule-based autoscaler and a converged policy run the same episodes as
// references. It measures utilisation, SLO violations and reward over
// those episodes. Optional extra arms (Config.Extra, none in Quick or
// Full) are ablations of the route: BCQ with another perturbation bound,
// plain DDPG trained on the same records, a fresh PPO agent, and PPO
// trained first in a simulator fitted from the records.
package bootstrapping

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/controller/bootstrap"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Name is the study's.
const Name = "bootstrapping"

// The arms, in table order.
const (
	AWARE     = "AWARE-bootstrapped"
	NoBoot    = "no-bootstrapping"
	Rule      = "rule-based"
	Converged = "converged"
)

// Arms are the study's arms in table order.
var Arms = []string{AWARE, NoBoot, Rule, Converged}

// Config is the study's size.
type Config struct {
	// Apps are test-split applications drawn from Seed.
	Apps int
	// Episodes are the first episodes of each application's life.
	Episodes int
	// Records are the OFFLINE episodes (the rule-based autoscaler acts
	// and is recorded); Updates the BCQ agent's offline updates on them;
	// Phi BCQ's perturbation (docs/agents.md: Φ = 0 bootstrapped best).
	Records, Updates int
	Phi              float64
	// Converged is the episodes the reference policy trains from scratch.
	Converged int
	Seed      uint64
	// Extra are optional arms run after Arms (BCQArm, OfflineDDPG, PPO,
	// PPOFitted; none in Quick and Full).
	Extra []string `json:",omitempty"`
	// SimEpisodes are the episodes the PPOFitted arm trains in the
	// simulator fitted from the records (set with that arm only).
	SimEpisodes int `json:",omitempty"`
	// EpisodeSteps are the steps of an episode (0: the simulator's 100).
	EpisodeSteps int `json:",omitempty"`
	// Testbed, when set, runs its arms on the testbed too (OnTestbed).
	Testbed *Testbed `json:",omitempty"`
}

// Quick is 5 applications' first 60 episodes, 10 recorded, 2000 offline
// updates, the converged policies 300 episodes.
func Quick() Config {
	return Config{Apps: 5, Episodes: 60, Records: 10, Updates: 2000, Converged: 300, Seed: 1}
}

// Full is 20 applications' first 200 episodes, 20 recorded, 5000 offline
// updates (the defaults of the removed `aware bootstrap`), the converged
// policies 600 episodes.
func Full() Config {
	return Config{Apps: 20, Episodes: 200, Records: 20, Updates: 5000, Converged: 600, Seed: 1}
}

// Validate refuses sizes that cannot run.
func (c Config) Validate() error {
	if c.Apps < 1 || c.Records < 1 || c.Episodes <= c.Records || c.Updates < 1 || c.Converged < 1 || !(c.Phi >= 0) {
		return fmt.Errorf("bootstrapping: %d applications, %d recorded episodes, %d offline updates and %d converged episodes must be positive, %d episodes more than the recorded, Φ %v not negative",
			c.Apps, c.Records, c.Updates, c.Converged, c.Episodes, c.Phi)
	}
	if c.EpisodeSteps < 0 {
		return fmt.Errorf("bootstrapping: episodes of %d steps", c.EpisodeSteps)
	}
	if c.Testbed != nil {
		if err := c.Testbed.Clock.Validate(); err != nil {
			return fmt.Errorf("bootstrapping: %w", err)
		}
		if c.EpisodeSteps < 1 {
			return fmt.Errorf("bootstrapping: on the testbed the episodes' steps must be set (OnTestbed)")
		}
		for _, arm := range c.Testbed.Arms {
			if !slices.Contains(TestbedArms, arm) {
				return fmt.Errorf("bootstrapping: arm %s does not run on the testbed (it runs %v)", arm, TestbedArms)
			}
		}
		if len(c.Extra) > 0 {
			return fmt.Errorf("bootstrapping: the optional arms %v do not run on the testbed", c.Extra)
		}
	}
	return c.validateExtra()
}

// AllArms are Arms and then the extra arms.
func (c Config) AllArms() []string { return append(slices.Clone(Arms), c.Extra...) }

// Draw draws the study's applications from its seed.
func (c Config) Draw(l *lab.Lab) ([]string, error) {
	return l.Draw(generator.SplitTest, c.Apps, rand.New(rand.NewPCG(c.Seed, 0xB007)))
}

// Plan is every (application, arm) cell.
func Plan(c Config, apps []string) study.Plan { return lab.AppArmPlan(apps, c.AllArms(), c.Seed) }

// Run is one cell's outcome: every episode's figures.
type Run struct {
	lab.Curve
	Seconds float64 `json:"seconds"`
	// OfflineMeanQ is the critic's mean value of the recorded actions
	// after the offline updates (the extra arms that train on the records).
	OfflineMeanQ float64 `json:"offlineMeanQ,omitempty"`
	// Fit is the simulator the PPOFitted arm trained in.
	Fit *Fit `json:"fit,omitempty"`
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
	m := l.Config().Mapping
	seed := c.Seed + cellSeed
	var out Run
	if c.Arm == Converged {
		_, ag, err := r.Policies.Get(ctx, lab.Policy{App: c.App, Seed: c.Seed, Episodes: cfg.Converged})
		if err != nil {
			return Run{}, err
		}
		start := time.Now()
		env, err := l.Env(c.App, 0, cfg.envOptions()...)
		if err != nil {
			return Run{}, err
		}
		eps, err := train.Run(ctx, env, ag, train.Config{Episodes: cfg.Episodes, Seed: seed, Mapping: m})
		if err != nil {
			return Run{}, err
		}
		out.Add(eps...)
		out.Seconds = time.Since(start).Seconds()
		return out, nil
	}
	start := time.Now()
	env, err := l.Env(c.App, 0, cfg.envOptions()...)
	if err != nil {
		return Run{}, err
	}
	switch c.Arm {
	case Rule:
		eps, err := l.RuleBased(ctx, env, c.App, cfg.Episodes, seed, nil)
		if err != nil {
			return Run{}, err
		}
		out.Add(eps...)
	case NoBoot, AWARE:
		eps, err := r.agentArm(ctx, c.App, c.Arm, env, seed, asRun{})
		if err != nil {
			return Run{}, err
		}
		out.Add(eps...)
	default:
		if out, err = r.extra(ctx, c, env, seed); err != nil {
			return Run{}, err
		}
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// asRun is how the simulator runs an agent arm: as the study does (the
// zero asRun: the agent acts at every step, each episode starts from a
// reset) or as the testbed runs it (atCadence).
type asRun struct {
	every      int  // the agent acts at every every-th step (train.Config.ActEvery)
	continuous bool // one running service, never reset (train.Config.Continuous)
}

// agentArm runs the episodes of an arm whose agent learns online (NoBoot,
// AWARE) on env, as how says.
func (r *Runner) agentArm(ctx context.Context, app, arm string, env gym.Env, seed uint64, how asRun) ([]train.Episode, error) {
	cfg, l := r.Config, r.Lab
	if arm == NoBoot {
		ag, err := l.NewDDPG(gym.StateDim, seed+1)
		if err != nil {
			return nil, err
		}
		return train.Run(ctx, env, ag, train.Config{Episodes: cfg.Episodes, Seed: seed, Explore: true, Mapping: l.Config().Mapping, ActEvery: how.every, Continuous: how.continuous})
	}
	return r.handover(ctx, app, env, seed, how, func(steps []agent.Transition, _ []gym.Metrics) (agent.Agent, error) {
		ag, err := bootstrap.New(gym.StateDim, gym.ActDim, rand.New(rand.NewPCG(seed, 2)), bootstrap.WithPhi(cfg.Phi))
		if err != nil {
			return nil, err
		}
		if _, err := bootstrap.Offline(ctx, ag, steps, cfg.Updates, nil); err != nil {
			return nil, fmt.Errorf("offline training: %w", err)
		}
		return ag, nil
	})
}

// cellSeed is added to a cell's seed for its episodes and agents.
const cellSeed = 88_000

// handover runs an arm that bootstraps (Algorithm 1's OFFLINE stage): the
// application's tuned rule-based autoscaler acts on env for the first
// Records episodes while every step is recorded (the transitions as an
// agent would have seen them, and the metrics Prometheus would have
// reported); ready turns the records into the agent, which then acts and
// trains online for the other episodes, both as how says.
func (r *Runner) handover(ctx context.Context, app string, env gym.Env, seed uint64, how asRun, ready func(steps []agent.Transition, metrics []gym.Metrics) (agent.Agent, error)) ([]train.Episode, error) {
	cfg, l := r.Config, r.Lab
	m := l.Config().Mapping
	rec, err := l.NewRuleBased(ctx, env, app)
	if err != nil {
		return nil, err
	}
	var metrics []gym.Metrics
	observe := func(_, _ int, info gym.Info) { metrics = append(metrics, info.Metrics) }
	eps, steps, err := train.Record(ctx, env, rec, l.Config().Step, train.Config{Episodes: cfg.Records, Seed: seed, Mapping: m, Observe: observe, Continuous: how.continuous})
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	ag, err := ready(steps, metrics)
	if err != nil {
		return nil, err
	}
	online, err := train.Run(ctx, env, ag, train.Config{Episodes: cfg.Episodes - cfg.Records, Seed: seed + uint64(cfg.Records), Explore: true, Mapping: m, ActEvery: how.every, Continuous: how.continuous})
	if err != nil {
		return nil, err
	}
	return append(eps, online...), nil
}

// envOptions are the simulator's options of the study's episodes.
func (c Config) envOptions() []sim.Option {
	if c.EpisodeSteps > 0 {
		return []sim.Option{sim.WithEpisode(c.EpisodeSteps)}
	}
	return nil
}

// Cost is the single-core time of the whole study at lab.Pace.
func (c Config) Cost(apps []string) time.Duration {
	p := lab.Pace
	n := time.Duration(len(apps))
	cost := n*time.Duration(c.Converged)*p.DDPG + n*time.Duration(c.Episodes)*(2*p.DDPG+2*p.Rule) + n*time.Duration(c.Updates)*time.Millisecond + n*p.Tune +
		n*c.extraCost()
	if c.Testbed != nil {
		// The agent arms again at the testbed's cadence (atCadence); the
		// testbed's own wall time is the clock's, not a core's.
		cost += n*time.Duration(c.Episodes)*2*p.DDPG + n*time.Duration(c.Updates)*time.Millisecond
	}
	return cost
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
	var tb map[[2]string]testbedrun.Result
	if c.Testbed != nil && !o.RenderOnly {
		// The testbed first, alone on the machine: its rounds are timed
		// (unless the suite ran this study's part with others' already).
		part, err := r.testbedPart(ctx, o, apps)
		if err != nil {
			return study.Report{}, err
		}
		if err := lab.RunTestbed(ctx, o, part); err != nil {
			return study.Report{}, err
		}
		if tb, err = r.testbedResults(o.Dir, apps); err != nil {
			return study.Report{}, err
		}
	}
	rep, err := lab.Execute(ctx, o, Name, c, c.Seed, plan, r.Cell, func(dir string, runs []Run) (study.Report, error) {
		rep, err := Render(c, plan, runs, o.Lab.TracesOf(plan.Apps()), o.Bootstrap, dir)
		if err != nil || c.Testbed == nil {
			return rep, err
		}
		if tb == nil {
			if tb, err = r.testbedResults(dir, apps); err != nil {
				return rep, err
			}
		}
		outs, err := Outcomes(c, plan, runs)
		if err != nil {
			return rep, err
		}
		cad, err := r.atCadence(ctx, dir, o.RenderOnly, apps, tb)
		if err != nil {
			return rep, err
		}
		return rep, testbedReport(&rep, c, outs, tb, cad, o.Bootstrap)
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
	apps, err := c.Draw(l)
	if err != nil {
		return 0, err
	}
	return c.Cost(apps), nil
}
