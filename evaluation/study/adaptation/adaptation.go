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
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/transfer"
	"github.com/aware-autoscaler/aware/evaluation/metalearn"
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

// The ablations (Config.Ablations): what of AWARE's lead over TL is left
// when the embedding tells the meta-trained agent nothing (zero), nothing
// learned (an untrained embedder, frozen), or something of another
// application (the embedding of a meta-training application's bundle),
// and when one agent is trained over the same applications without an
// embedding at all (multi-task DDPG, fine-tuned as TL is).
const (
	ZeroEmbedding      = "AWARE-zero-embedding"
	UntrainedEmbedding = "AWARE-untrained-embedding"
	ShuffledEmbedding  = "AWARE-shuffled-embedding"
	MultiTask          = "multitask-DDPG"
)

// Identification is the arm of the cells that evaluate a meta-training
// run's FLASH on held-out applications (Config.Identify): one per run, not
// a unit of the study.
const Identification = "FLASH-identification"

// Arms are the study's arms in table order.
var Arms = []string{AWARE, TL, TLPlus, Rule}

// Ablations are the ablation arms in table order.
var Ablations = []string{ZeroEmbedding, UntrainedEmbedding, ShuffledEmbedding, MultiTask}

// methods are the arms that adapt and whose final windows set a unit's
// reference.
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
	// Meta is the meta-training run AWARE starts from, and MetaSeeds
	// how many such runs there are (seeds Meta.Seed, Meta.Seed+1, …): test
	// t's AWARE cells start from run (t−1) mod MetaSeeds, so that the
	// intervals carry the meta-training seed's variance. With From there
	// is one run.
	Meta      lab.MetaRun
	MetaSeeds int
	// Epsilon is every adapting arm's exploration scale at its first
	// episode, decaying from there by the agents' common schedule: the
	// meta-trained agent's ε decayed over meta-training (to about 0.2 in
	// --full) and TL's over its source's training, so without the reset
	// the arms would adapt with different exploration. 1 is a fresh
	// DDPG's.
	Epsilon float64
	// Ablations is how many tests (the first ones) also run the ablation
	// arms on their units.
	Ablations int
	// Identify is how many test-split applications each meta-training
	// run's FLASH is evaluated on (identification by nearest neighbour and
	// the similarity against the reward lost, `aware meta eval`'s
	// measurement; 0: none).
	Identify int
	Rule     train.ConvergenceRule
	// Plateau is each arm's own convergence rule (ConvergenceRule.Plateau:
	// the trailing Window episodes' mean within Tolerance of the Window
	// before), counted beside Rule.
	Plateau train.ConvergenceRule
	Seed    uint64
	// From, when set, is the folder of an `aware meta train` run that
	// AWARE starts from instead of Meta's (trained with bundles of Meta.M
	// trajectories; Meta's other fields are then not used).
	From string `json:",omitempty"`
}

// Quick is a run of a few minutes on 2 cores: 3 tests of 4 applications,
// 50 episodes each, TL's sources 100 episodes, from 3 meta-training runs
// of 24 applications × 4 rounds (one per test), every test with the
// ablations; the methods' best final window is the reference.
func Quick() Config {
	return Config{Tests: 3, Apps: 4, Episodes: 50, Source: 100, Meta: lab.MetaRun{Apps: 24, Rounds: 4, M: 20, Seed: 1}, MetaSeeds: 3,
		Epsilon: 1, Ablations: 3, Identify: 20, Rule: train.ConvergenceRule{Window: 10, Tolerance: 0.05}, Plateau: train.ConvergenceRule{Window: 10, Tolerance: 0.02}, Seed: 1}
}

// Full is the paper's scale: 100 tests of 10 applications, 60 episodes
// each, TL's sources 200 episodes, every application's converged policy
// 400 episodes from scratch, the meta learner trained on the whole train
// split for 10 rounds with 3 seeds, the ablations on the first 20 tests.
func Full() Config {
	return Config{Tests: 100, Apps: 10, Episodes: 60, Source: 200, Converged: 400, Meta: lab.MetaRun{Apps: 800, Rounds: 10, M: 20, Seed: 1}, MetaSeeds: 3,
		Epsilon: 1, Ablations: 20, Identify: 50, Rule: train.ConvergenceRule{Window: 10, Tolerance: 0.05}, Plateau: train.ConvergenceRule{Window: 10, Tolerance: 0.02}, Seed: 1}
}

// Validate refuses sizes that cannot run.
func (c Config) Validate() error {
	if c.Tests < 1 || c.Apps < 1 || c.Source < 1 || c.Converged < 0 || c.Episodes < c.Rule.Window || c.Rule.Window < 1 || !(c.Rule.Tolerance >= 0) {
		return fmt.Errorf("adaptation: %d tests, %d applications and %d source episodes must be positive, %d converged episodes not negative, %d episodes at least the convergence window %d (positive), tolerance %v not negative",
			c.Tests, c.Apps, c.Source, c.Converged, c.Episodes, c.Rule.Window, c.Rule.Tolerance)
	}
	if c.Plateau.Window < 1 || !(c.Plateau.Tolerance >= 0) {
		return fmt.Errorf("adaptation: the plateau rule's window %d must be positive and tolerance %v not negative", c.Plateau.Window, c.Plateau.Tolerance)
	}
	if c.Identify == 1 || c.Identify < 0 {
		return fmt.Errorf("adaptation: identification on %d applications: at least 2, or 0 for none", c.Identify)
	}
	if c.MetaSeeds < 1 || c.Ablations < 0 || c.Ablations > c.Tests || !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 1) {
		return fmt.Errorf("adaptation: %d meta-training seeds must be positive, %d tests with ablations within [0, %d tests], ε %v finite and not negative",
			c.MetaSeeds, c.Ablations, c.Tests, c.Epsilon)
	}
	return nil
}

// Test is one A/B test: TL's source application, the applications
// adapted to and the seed of the meta-training run AWARE starts from.
type Test struct {
	Index    int      `json:"test"`
	Source   string   `json:"source"`
	Apps     []string `json:"apps"`
	MetaSeed uint64   `json:"metaSeed"`
}

// identificationCell evaluates the meta-training run of seed metaSeed.
func identificationCell(c Config, metaSeed uint64) study.Cell {
	return study.Cell{Arm: Identification, App: fmt.Sprintf("meta-s%d", metaSeed), Seed: c.Seed}
}

// metaRun is the meta-training run test t's AWARE cells start from.
func (c Config) metaRun(t Test) lab.MetaRun {
	run := c.Meta
	run.Seed = t.MetaSeed
	return run
}

// ablated says whether test t's units run the ablations.
func (c Config) ablated(t Test) bool { return t.Index <= c.Ablations }

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
		ms := c.Meta.Seed
		if c.From == "" {
			ms += uint64((t - 1) % c.MetaSeeds)
		}
		out = append(out, Test{Index: t, Source: src[0], Apps: apps, MetaSeed: ms})
	}
	return out, nil
}

// Plan is every (test, application, arm) cell, arms interleaved so that
// shards are balanced, and the identification cell of each meta-training
// run (Config.Identify).
func Plan(c Config, tests []Test) study.Plan {
	var p study.Plan
	if c.Identify > 0 {
		seen := map[uint64]bool{}
		for _, t := range tests {
			if !seen[t.MetaSeed] {
				seen[t.MetaSeed] = true
				p = append(p, identificationCell(c, t.MetaSeed))
			}
		}
	}
	for _, t := range tests {
		for _, a := range t.Apps {
			arms := Arms
			if c.ablated(t) {
				arms = slices.Clone(Arms)
				for _, a := range Ablations {
					// The multi-task agent trains over the study's own
					// meta-training applications, which a run from
					// elsewhere does not name.
					if a != MultiTask || c.From == "" {
						arms = append(arms, a)
					}
				}
			}
			for _, arm := range arms {
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
	// Epsilon is the adapting agent's exploration scale at its first
	// episode (Config.Epsilon; 0 for the rule-based arm).
	Epsilon float64 `json:"epsilon,omitempty"`
	// Identification is an identification cell's evaluation of its
	// meta-training run.
	Identification *metalearn.Evaluation `json:"identification,omitempty"`
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

// Cell runs one cell: the arm's agent prepared from the runs it starts
// from (meta-training, TL's source), then adapted and timed; or a
// meta-training run's identification.
func (r *Runner) Cell(ctx context.Context, c study.Cell) (Run, error) {
	if c.Arm == Identification {
		return r.identify(ctx, c)
	}
	t, err := r.test(c.Test)
	if err != nil {
		return Run{}, err
	}
	var out Run
	if cfg := r.Config; cfg.Converged > 0 {
		tr, _, err := r.Policies.Get(ctx, lab.Policy{App: c.App, Seed: c.Seed, Episodes: cfg.Converged})
		if err != nil {
			return Run{}, err
		}
		out.Converged = &tr.Greedy
	}
	env, err := r.Lab.Env(c.App, 0)
	if err != nil {
		return Run{}, err
	}
	seed := c.Seed + 1000*uint64(c.Test)
	adapt, err := r.prepare(ctx, t, c, env, seed)
	if err != nil {
		return Run{}, err
	}
	out.Epsilon = adapt.epsilon
	start := time.Now() // adaptation only: the runs it starts from are shared
	eps, err := adapt.run(ctx)
	if err != nil {
		return Run{}, err
	}
	out.Seconds = time.Since(start).Seconds()
	out.Add(eps...)
	return out, nil
}

// adaptation is an arm's prepared agent: its exploration scale at the
// first episode and the run of its episodes.
type adaptation struct {
	epsilon float64
	run     func(context.Context) ([]train.Episode, error)
}

// prepare builds cell c's agent on env, its exploration reset to the
// study's (Config.Epsilon), and the adaptation it runs.
func (r *Runner) prepare(ctx context.Context, t Test, c study.Cell, env gym.Env, seed uint64) (adaptation, error) {
	cfg, l := r.Config, r.Lab
	switch c.Arm {
	case AWARE, ZeroEmbedding, UntrainedEmbedding, ShuffledEmbedding, MultiTask:
		return r.prepareMeta(ctx, t, c, env, seed)
	case TL, TLPlus:
		plus := c.Arm == TLPlus
		_, src, err := r.Policies.Get(ctx, lab.Policy{App: t.Source, Seed: c.Seed + 3, Episodes: cfg.Source, Plus: plus})
		if err != nil {
			return adaptation{}, err
		}
		var e gym.Env = env
		if plus {
			if e, err = lab.PlusEnv(env); err != nil {
				return adaptation{}, err
			}
		}
		ag, err := l.NewDDPG(e.ObservationSpace().Dim(), c.Seed+7)
		if err != nil {
			return adaptation{}, err
		}
		if err := transfer.Copy(ag, src, ""); err != nil {
			return adaptation{}, err
		}
		if err := ag.SetEpsilon(cfg.Epsilon); err != nil {
			return adaptation{}, err
		}
		return adaptation{epsilon: ag.Epsilon(), run: func(ctx context.Context) ([]train.Episode, error) {
			return train.Run(ctx, e, ag, train.Config{Episodes: cfg.Episodes, Seed: seed, Explore: true, Mapping: l.Config().Mapping})
		}}, nil
	case Rule:
		return adaptation{run: func(ctx context.Context) ([]train.Episode, error) {
			return l.RuleBased(ctx, env, c.App, cfg.Episodes, seed, nil)
		}}, nil
	}
	return adaptation{}, fmt.Errorf("adaptation: unknown arm %q", c.Arm)
}

// prepareMeta is AWARE's agent and its ablations': the meta-trained agent
// conditioned on the frozen meta learner's embedding of the application's
// own episodes (AWARE), on zeros, on an untrained embedder's embedding of
// them, or on a meta-training application's embedding; or the agent
// trained over the same applications without an embedding, fine-tuned
// with zeros where the embedding would be (multi-task DDPG).
func (r *Runner) prepareMeta(ctx context.Context, t Test, c study.Cell, env gym.Env, seed uint64) (adaptation, error) {
	cfg := r.Config
	run := cfg.metaRun(t)
	if c.Arm == MultiTask {
		run = run.WithoutEmbedding()
	}
	mt, err := r.meta(ctx, run)
	if err != nil {
		return adaptation{}, err
	}
	emb := mt.FLASH.Embedder()
	ac := train.AdaptConfig{Episodes: cfg.Episodes, Seed: seed, Mapping: mt.Mapping}
	switch c.Arm {
	case ZeroEmbedding, MultiTask:
		ac.Fixed = make([]float64, emb.Config().Embed)
	case UntrainedEmbedding:
		if emb, err = meta.NewEmbedder(emb.Config(), rand.New(rand.NewPCG(run.Seed, 0x0E4B))); err != nil {
			return adaptation{}, err
		}
	case ShuffledEmbedding:
		if ac.Fixed, err = otherEmbedding(mt.FLASH, c, t); err != nil {
			return adaptation{}, err
		}
	}
	if err := mt.Agent.SetEpsilon(cfg.Epsilon); err != nil {
		return adaptation{}, err
	}
	opts := meta.DefaultOptions(100)
	opts.M = cfg.Meta.M
	return adaptation{epsilon: mt.Agent.Epsilon(), run: func(ctx context.Context) ([]train.Episode, error) {
		return train.Adapt(ctx, env, c.App, mt.Agent, emb, opts, ac)
	}}, nil
}

// otherEmbedding is the shuffled ablation's embedding for cell c: the
// frozen meta learner's embedding of the bundle of a meta-training
// application drawn from the cell's test and application.
func otherEmbedding(f *meta.FLASH, c study.Cell, t Test) ([]float64, error) {
	names := f.Tasks()
	if len(names) == 0 {
		return nil, fmt.Errorf("adaptation: %s: the meta-training run holds no application to take an embedding from", c.Key())
	}
	h := sha256.Sum256([]byte(c.App))
	rnd := rand.New(rand.NewPCG(t.MetaSeed+uint64(t.Index), binary.LittleEndian.Uint64(h[:8])))
	other := names[rnd.IntN(len(names))]
	return f.Embedding(nil, other)
}

// identify evaluates the FLASH of the meta-training run of cell c's test
// seed on the first Config.Identify test-split applications, with bundles
// of the run's M greedy episodes drawn at random points of the day, as
// `aware meta eval` does by default.
func (r *Runner) identify(ctx context.Context, c study.Cell) (Run, error) {
	cfg := r.Config
	run := cfg.Meta
	for _, t := range r.Tests {
		if identificationCell(cfg, t.MetaSeed) == c {
			run = cfg.metaRun(t)
		}
	}
	mt, err := r.meta(ctx, run)
	if err != nil {
		return Run{}, err
	}
	start := time.Now()
	ev, err := metalearn.Evaluate(ctx, r.Lab, metalearn.EvalConfig{From: mt.Dir, Apps: cfg.Identify, Episodes: cfg.Meta.M, M: cfg.Meta.M, Seed: run.Seed, Windows: metalearn.WindowsRandom})
	if err != nil {
		return Run{}, fmt.Errorf("adaptation: %s: %w", c.Key(), err)
	}
	// A cell depends on its fields only: the checkpoint by its run's
	// folder, not by where this machine keeps it.
	ev.Checkpoint = filepath.Join(filepath.Base(mt.Dir), train.MetaCheckpoint)
	return Run{Seconds: time.Since(start).Seconds(), Identification: &ev}, nil
}

// meta is a meta-training run's agent and meta learner: a fresh copy for
// each call.
func (r *Runner) meta(ctx context.Context, run lab.MetaRun) (*lab.Meta, error) {
	if r.Config.From != "" {
		return r.Lab.MetaFrom(r.Config.From, r.Config.Meta.M, r.Config.Meta.Seed)
	}
	return r.Policies.Meta(ctx, run, r.MetaProgress)
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
// meta-training runs (and the multi-task agents' runs of the seeds whose
// tests run the ablations), the source and converged policies, the
// adaptation, ablation and rule-based episodes.
func (c Config) Cost(tests []Test) time.Duration {
	sources, apps := map[string]bool{}, map[string]bool{}
	units, ablated := 0, 0
	for _, t := range tests {
		sources[t.Source] = true
		for _, a := range t.Apps {
			apps[a] = true
			units++
		}
		if c.ablated(t) {
			ablated += len(t.Apps)
		}
	}
	p := lab.Pace
	var d time.Duration
	if c.From == "" {
		// Tests 1…MetaSeeds start from one run each, the ablated ones
		// from as many multi-task runs.
		runs := time.Duration(c.Meta.Apps * c.Meta.Rounds)
		d = time.Duration(min(c.MetaSeeds, c.Tests))*runs*p.MetaTrain + time.Duration(min(c.MetaSeeds, c.Ablations))*runs*p.DDPG
	}
	d += time.Duration(2*len(sources)*c.Source)*p.DDPG +
		time.Duration(units*c.Episodes)*(p.Meta+2*p.DDPG+p.Rule) + time.Duration(len(apps))*p.Tune
	d += time.Duration(ablated*c.Episodes) * (3*p.Meta + p.DDPG)
	if c.Converged > 0 {
		d += time.Duration(len(apps)) * (time.Duration(c.Converged)*p.DDPG + lab.GreedyEpisodes*p.Rule)
	}
	if c.Identify > 0 {
		// Per application two bundles of greedy episodes, each embedded by
		// the trained and an untrained meta learner, then a greedy episode
		// with every other application's embedding.
		perApp := time.Duration(2*c.Meta.M+c.Identify)*p.Rule + 4*p.MetaTrain
		d += time.Duration(min(c.MetaSeeds, c.Tests)*c.Identify) * perApp
	}
	return d
}
