// Package adaptation is the adaptation study (paper §5.2): in each of R
// A/B tests, TL's and TL+'s source policy trains on one train-split
// application drawn from the test's seed, and AWARE (the meta-trained
// agent conditioned on the frozen meta learner's embedding), TL (the
// source's weights fine-tuned) and TL+ (TL with a load forecast and an
// allocation → performance table in its state) each adapt, with the same
// episode budget and episode seeds, to the test's draw of test-split
// applications; the tuned rule-based autoscaler runs the same episodes as
// the reference row. It measures episodes to converge, CPU-seconds spent
// adapting, utilisation deficit against the converged policy and SLO
// violations while adapting, with bootstrap intervals, and the paper's
// ratios beside ours. AWARE starts from the study's own meta-training run,
// or from a run of `aware meta train` (Config.From).
package adaptation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/transfer"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
)

// Name is the study's.
const Name = "adaptation"

// The arms, in table order.
const (
	AWARE  = "AWARE"
	TL     = "TL"
	TLPlus = "TL+"
	Rule   = "rule-based"
)

// Arms are the study's arms in table order.
var Arms = []string{AWARE, TL, TLPlus, Rule}

// methods are the arms that adapt.
var methods = []string{AWARE, TL, TLPlus}

// Config is the study's size.
type Config struct {
	// Tests is R, the number of A/B tests; Apps the test-split
	// applications each adapts to.
	Tests, Apps int
	// Episodes is every method's adaptation budget per application.
	Episodes int
	// Source is the episodes TL's and TL+'s source policies train.
	Source int
	// Converged is the episodes of the reference policy trained from
	// scratch on each application (0: the best of the methods' final
	// windows is the reference).
	Converged int
	// Meta is the meta-training run AWARE starts from.
	Meta lab.MetaRun
	Rule train.ConvergenceRule
	Seed uint64
	// From, when set, is the folder of an `aware meta train` run that
	// AWARE starts from instead of Meta's (trained with bundles of Meta.M
	// trajectories; Meta's other fields are then not used).
	From string `json:",omitempty"`
}

// Quick is a run of a few minutes on 2 cores: 3 tests of 4 applications,
// 50 episodes each, TL's sources 100 episodes, from a meta-training run of
// 24 applications × 4 rounds; the methods' best final window is the
// reference.
func Quick() Config {
	return Config{Tests: 3, Apps: 4, Episodes: 50, Source: 100, Meta: lab.MetaRun{Apps: 24, Rounds: 4, M: 20, Seed: 1},
		Rule: train.ConvergenceRule{Window: 10, Tolerance: 0.05}, Seed: 1}
}

// Full is the paper's scale: 100 tests of 10 applications, 60 episodes
// each, TL's sources 200 episodes, every application's converged policy
// 400 episodes from scratch, the meta learner trained on the whole train
// split for 10 rounds.
func Full() Config {
	return Config{Tests: 100, Apps: 10, Episodes: 60, Source: 200, Converged: 400, Meta: lab.MetaRun{Apps: 800, Rounds: 10, M: 20, Seed: 1},
		Rule: train.ConvergenceRule{Window: 10, Tolerance: 0.05}, Seed: 1}
}

// Validate refuses sizes that cannot run.
func (c Config) Validate() error {
	if c.Tests < 1 || c.Apps < 1 || c.Source < 1 || c.Converged < 0 || c.Episodes < c.Rule.Window || c.Rule.Window < 1 || !(c.Rule.Tolerance >= 0) {
		return fmt.Errorf("adaptation: %d tests, %d applications and %d source episodes must be positive, %d converged episodes not negative, %d episodes at least the convergence window %d (positive), tolerance %v not negative",
			c.Tests, c.Apps, c.Source, c.Converged, c.Episodes, c.Rule.Window, c.Rule.Tolerance)
	}
	return nil
}

// Test is one A/B test: TL's source application and the applications
// adapted to.
type Test struct {
	Index  int      `json:"test"`
	Source string   `json:"source"`
	Apps   []string `json:"apps"`
}

// DrawTests draws the tests from the seed: test t's source and
// applications depend on (Seed, t) only, so that a larger study holds a
// smaller one's tests.
func DrawTests(c Config, l *lab.Lab) ([]Test, error) {
	var out []Test
	for t := 1; t <= c.Tests; t++ {
		rnd := rand.New(rand.NewPCG(c.Seed, uint64(t)))
		src, err := l.Draw(generator.SplitTrain, 1, rnd)
		if err != nil {
			return nil, err
		}
		apps, err := l.Draw(generator.SplitTest, c.Apps, rnd)
		if err != nil {
			return nil, err
		}
		out = append(out, Test{Index: t, Source: src[0], Apps: apps})
	}
	return out, nil
}

// Plan is every (test, application, arm) cell, arms interleaved so that
// shards are balanced.
func Plan(c Config, tests []Test) study.Plan {
	var p study.Plan
	for _, t := range tests {
		for _, a := range t.Apps {
			for _, arm := range Arms {
				p = append(p, study.Cell{Test: t.Index, Arm: arm, App: a, Seed: c.Seed})
			}
		}
	}
	return p
}

// Run is one cell's outcome: every adaptation episode's figures.
type Run struct {
	lab.Curve
	// Seconds is the cell's CPU time: one goroutine, wall time.
	Seconds float64 `json:"seconds"`
	// Converged is the reference policy's greedy score (Config.Converged
	// > 0).
	Converged *train.Score `json:"converged,omitempty"`
}

// Runner runs the cells.
type Runner struct {
	Lab      *lab.Lab
	Policies *lab.Policies
	Config   Config
	Tests    []Test
	// MetaProgress, when set, is called after each meta-training episode.
	MetaProgress func()
}

func (r *Runner) test(i int) (Test, error) {
	for _, t := range r.Tests {
		if t.Index == i {
			return t, nil
		}
	}
	return Test{}, fmt.Errorf("adaptation: no test %d", i)
}

// Cell runs one cell.
func (r *Runner) Cell(ctx context.Context, c study.Cell) (Run, error) {
	t, err := r.test(c.Test)
	if err != nil {
		return Run{}, err
	}
	cfg, l := r.Config, r.Lab
	m := l.Config().Mapping
	seed := c.Seed + 1000*uint64(c.Test)
	var out Run
	if cfg.Converged > 0 {
		tr, _, err := r.Policies.Get(ctx, lab.Policy{App: c.App, Seed: c.Seed, Episodes: cfg.Converged})
		if err != nil {
			return Run{}, err
		}
		out.Converged = &tr.Greedy
	}
	start := time.Now()
	env, err := l.Env(c.App, 0)
	if err != nil {
		return Run{}, err
	}
	var eps []train.Episode
	switch c.Arm {
	case AWARE:
		mt, err := r.meta(ctx)
		if err != nil {
			return Run{}, err
		}
		start = time.Now() // adaptation only: the meta run is shared by every cell
		opts := meta.DefaultOptions(100)
		opts.M = cfg.Meta.M
		eps, err = train.Adapt(ctx, env, c.App, mt.Agent, mt.FLASH.Embedder(), opts, train.AdaptConfig{Episodes: cfg.Episodes, Seed: seed, Mapping: mt.Mapping})
		if err != nil {
			return Run{}, err
		}
	case TL, TLPlus:
		plus := c.Arm == TLPlus
		_, src, err := r.Policies.Get(ctx, lab.Policy{App: t.Source, Seed: c.Seed + 3, Episodes: cfg.Source, Plus: plus})
		if err != nil {
			return Run{}, err
		}
		start = time.Now()
		var e gym.Env = env
		if plus {
			if e, err = lab.PlusEnv(env); err != nil {
				return Run{}, err
			}
		}
		ag, err := l.NewDDPG(e.ObservationSpace().Dim(), c.Seed+7)
		if err != nil {
			return Run{}, err
		}
		if err := transfer.Copy(ag, src, ""); err != nil {
			return Run{}, err
		}
		eps, err = train.Run(ctx, e, ag, train.Config{Episodes: cfg.Episodes, Seed: seed, Explore: true, Mapping: m})
		if err != nil {
			return Run{}, err
		}
	case Rule:
		if eps, err = l.RuleBased(ctx, env, c.App, cfg.Episodes, seed, nil); err != nil {
			return Run{}, err
		}
	default:
		return Run{}, fmt.Errorf("adaptation: unknown arm %q", c.Arm)
	}
	out.Seconds = time.Since(start).Seconds()
	out.Add(eps...)
	return out, nil
}

// meta is the meta-trained agent and meta learner AWARE starts from: a
// fresh copy for each call.
func (r *Runner) meta(ctx context.Context) (*lab.Meta, error) {
	if r.Config.From != "" {
		return r.Lab.MetaFrom(r.Config.From, r.Config.Meta.M, r.Config.Meta.Seed)
	}
	return r.Policies.Meta(ctx, r.Config.Meta, r.MetaProgress)
}

// Execute runs the study (the cells not done yet) and reports it.
func Execute(ctx context.Context, o lab.Run, c Config) (study.Report, error) {
	if err := c.Validate(); err != nil {
		return study.Report{}, err
	}
	var recorded any = c
	if c.From != "" {
		if !o.RenderOnly {
			// A folder that cannot serve is refused before any cell runs.
			if _, err := o.Lab.MetaFrom(c.From, c.Meta.M, c.Meta.Seed); err != nil {
				return study.Report{}, fmt.Errorf("AWARE's meta-training run: %w", err)
			}
		}
		// The folder's checkpoint, not only its path, keys the cells: a
		// run trained again in the same folder gives other cells.
		b, err := os.ReadFile(filepath.Join(c.From, train.MetaCheckpoint))
		if err != nil {
			return study.Report{}, fmt.Errorf("AWARE's meta-training run: %w", err)
		}
		sum := sha256.Sum256(b)
		recorded = struct {
			Config
			FromSHA256 string
		}{c, hex.EncodeToString(sum[:])}
	}
	tests, err := DrawTests(c, o.Lab)
	if err != nil {
		return study.Report{}, err
	}
	plan := Plan(c, tests)
	r := &Runner{Lab: o.Lab, Policies: o.Policies, Config: c, Tests: tests}
	return lab.Execute(ctx, o, Name, recorded, c.Seed, plan, r.Cell, func(dir string, runs []Run) (study.Report, error) {
		apps := plan.Apps()
		for _, t := range tests {
			apps = append(apps, t.Source) // TL's and TL+'s sources
		}
		return Render(c, plan, tests, runs, o.Lab.TracesOf(apps), o.Bootstrap, dir)
	})
}

// Estimate is the study's single-core time in l (Cost of its draw).
func (c Config) Estimate(l *lab.Lab) (time.Duration, error) {
	tests, err := DrawTests(c, l)
	if err != nil {
		return 0, err
	}
	return c.Cost(tests), nil
}

// Cost is the single-core time of the whole study at lab.Pace: the
// meta-training run, the source and converged policies, the adaptation
// and the rule-based episodes.
func (c Config) Cost(tests []Test) time.Duration {
	sources, apps := map[string]bool{}, map[string]bool{}
	units := 0
	for _, t := range tests {
		sources[t.Source] = true
		for _, a := range t.Apps {
			apps[a] = true
			units++
		}
	}
	p := lab.Pace
	var d time.Duration
	if c.From == "" {
		d = time.Duration(c.Meta.Apps*c.Meta.Rounds) * p.MetaTrain
	}
	d += time.Duration(2*len(sources)*c.Source)*p.DDPG +
		time.Duration(units*c.Episodes)*(p.Meta+2*p.DDPG+p.Rule) + time.Duration(len(apps))*p.Tune
	if c.Converged > 0 {
		d += time.Duration(len(apps)) * (time.Duration(c.Converged)*p.DDPG + lab.GreedyEpisodes*p.Rule)
	}
	return d
}
