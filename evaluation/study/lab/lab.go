package lab

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/aware-autoscaler/aware/controller/forecast"
	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/transfer"
	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Config is the world of a study.
type Config struct {
	// PoolSize and PoolSeed choose the generated pool (1000, 1).
	PoolSize int
	PoolSeed int64
	// Traces is the folder of the real traces; sources whose file is
	// absent get seeded synthetic shapes.
	Traces string
	// Trace, when set, is one trace file (any format workloads/trace
	// reads) that replaces every source's shape: a study rerun on the
	// user's own load.
	Trace string
	// Step is the simulation step (30 s).
	Step time.Duration
	// ShapeSeed seeds the synthetic shapes.
	ShapeSeed uint64
	// Noise is the standard deviation of every agent's Gaussian
	// exploration noise.
	Noise float64
	// Mapping turns the agents' actions into allocations.
	Mapping gym.Mapping
	// Tune is the search of each application's HPA target.
	Tune Tune
}

// Tune is the search of an application's HPA CPU target
// (baselines.TuneConfig): Steps of calibration window before the
// application's evaluation start, the first Warmup not counted, and the
// largest fraction of counted steps violating the SLO that still meets it.
type Tune struct {
	Steps, Warmup int
	MaxViolations float64
}

// DefaultNoise is the exploration noise of the agents that meta-training
// and adaptation train (σ = 0.05 of the action box's half-range;
// docs/agents.md: FIRM's 0.2 explored the memory limit into OOM kills).
const DefaultNoise = 0.05

// DefaultConfig is the pool and simulation every other command uses: 1000
// applications of seed 1, 30 s steps, the traces in ../shared/traces, and
// the HPA target search of `aware run` (a day's calibration window, its
// first hour not counted, at most 1 % of steps violating the SLO).
func DefaultConfig() Config {
	return Config{PoolSize: 1000, PoolSeed: 1, Traces: generator.TracesDir, Step: 30 * time.Second, ShapeSeed: 1,
		Noise: DefaultNoise, Mapping: gym.Relative,
		Tune: Tune{Steps: 2880, Warmup: 120, MaxViolations: 0.01}}
}

// Lab is a built world. Its methods are safe for concurrent use.
type Lab struct {
	cfg    Config
	prof   *calibration.Profile
	apps   []generator.App
	sims   []sim.App
	index  map[string]int
	origin map[string]string

	mu    sync.Mutex
	tuned map[string]*tuning
}

type tuning struct {
	once sync.Once
	t    baselines.Tuned
	err  error
}

// New generates the pool and loads the shapes.
func New(cfg Config) (*Lab, error) {
	if cfg.PoolSize < 1 || cfg.Step < time.Second {
		return nil, fmt.Errorf("lab: pool of %d applications and step %s: need at least one application and a step of at least 1s", cfg.PoolSize, cfg.Step)
	}
	prof, err := calibration.Default()
	if err != nil {
		return nil, err
	}
	apps, err := generator.FirstApps(prof, cfg.PoolSeed, cfg.PoolSize)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var shapes generator.Shapes
	if cfg.Trace != "" {
		shapes, err = generator.FileShapes(cfg.Trace, cfg.Step)
	} else {
		shapes, err = generator.LoadShapes(cfg.Traces, cfg.Step, cfg.ShapeSeed)
	}
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	sims, err := generator.SimApps(apps, shapes)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l := &Lab{cfg: cfg, prof: prof, apps: apps, sims: sims, index: make(map[string]int, len(apps)), origin: shapes.Origin, tuned: map[string]*tuning{}}
	for i, a := range apps {
		l.index[a.Name()] = i
	}
	return l, nil
}

// Config is the lab's configuration.
func (l *Lab) Config() Config { return l.cfg }

// Profile is the calibration profile the simulator runs on.
func (l *Lab) Profile() *calibration.Profile { return l.prof }

// Traces names where each source's shape came from, sorted ("nasa: real:
// nasa-….txt.gz", "twitter: synthetic", …).
func (l *Lab) Traces() []string {
	var out []string
	for _, src := range slices.Sorted(maps.Keys(l.origin)) {
		out = append(out, src+": "+l.origin[src])
	}
	return out
}

// TracesOf is Traces with, per source, how many of apps (names, each
// counted once; unknown names are not counted) it drives: which of a
// study's applications ran on which load ("twitter: fitted to
// twitter-….txt.gz (3 of 12 applications)").
func (l *Lab) TracesOf(apps []string) []string {
	count, seen := map[string]int{}, map[string]bool{}
	for _, name := range apps {
		if i, ok := l.index[name]; ok && !seen[name] {
			seen[name] = true
			count[l.apps[i].Load.Source]++
		}
	}
	var out []string
	for _, src := range slices.Sorted(maps.Keys(l.origin)) {
		out = append(out, fmt.Sprintf("%s: %s (%d of %d applications)", src, l.origin[src], count[src], len(seen)))
	}
	return out
}

// Split is the names of split's applications ("train" or "test"), in pool
// order.
func (l *Lab) Split(split string) []string {
	var out []string
	for _, a := range l.apps {
		if a.Split == split {
			out = append(out, a.Name())
		}
	}
	return out
}

// Draw is n distinct applications of split drawn by rnd, in draw order.
func (l *Lab) Draw(split string, n int, rnd *rand.Rand) ([]string, error) {
	if rnd == nil {
		return nil, fmt.Errorf("lab: drawing %d %s-split applications: no source of randomness", n, split)
	}
	names := l.Split(split)
	if n > len(names) {
		return nil, fmt.Errorf("lab: %d %s-split applications wanted, the pool of %d (seed %d) has %d", n, split, l.cfg.PoolSize, l.cfg.PoolSeed, len(names))
	}
	rnd.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return names[:n], nil
}

// App is the named application, generated and on the simulator.
func (l *Lab) App(name string) (generator.App, sim.App, error) {
	i, ok := l.index[name]
	if !ok {
		return generator.App{}, sim.App{}, fmt.Errorf("lab: no application %q in the pool of %d (seed %d)", name, l.cfg.PoolSize, l.cfg.PoolSeed)
	}
	return l.apps[i], l.sims[i], nil
}

// SimAt is the named application's simulator form with its load shape at
// step instead of the lab's (the same traces, files or seeded synthetic
// shapes, resampled): what a digital twin that advances step per tick
// plays. The shapes are loaded again at each call.
func (l *Lab) SimAt(name string, step time.Duration) (sim.App, error) {
	a, _, err := l.App(name)
	if err != nil {
		return sim.App{}, err
	}
	var shapes generator.Shapes
	if l.cfg.Trace != "" {
		shapes, err = generator.FileShapes(l.cfg.Trace, step)
	} else {
		shapes, err = generator.LoadShapes(l.cfg.Traces, step, l.cfg.ShapeSeed)
	}
	if err != nil {
		return sim.App{}, fmt.Errorf("lab: %w", err)
	}
	sims, err := generator.SimApps([]generator.App{a}, shapes)
	if err != nil {
		return sim.App{}, fmt.Errorf("lab: %w", err)
	}
	return sims[0], nil
}

// Env is the named application on the simulator, under scenario sc from
// the first step (0: none).
func (l *Lab) Env(name string, sc sim.Scenario, opts ...sim.Option) (*sim.AppEnv, error) {
	_, a, err := l.App(name)
	if err != nil {
		return nil, err
	}
	env, err := sim.NewEnv(l.prof, a, append([]sim.Option{sim.WithStep(l.cfg.Step)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", name, err)
	}
	if sc != 0 {
		if err := env.Cluster().Inject(0, sc); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// ParseScenario reads a scenario name; "" is none.
func ParseScenario(name string) (sim.Scenario, error) {
	if name == "" {
		return 0, nil
	}
	return sim.ParseScenario(name)
}

// CPUTarget is the named application's tuned HPA CPU target: the highest
// candidate whose HPA+VPA run over the calibration window before the
// application's evaluation start meets the SLO (computed once).
func (l *Lab) CPUTarget(ctx context.Context, name string) (baselines.Tuned, error) {
	a, s, err := l.App(name)
	if err != nil {
		return baselines.Tuned{}, err
	}
	l.mu.Lock()
	t, ok := l.tuned[name]
	if !ok {
		t = &tuning{}
		l.tuned[name] = t
	}
	l.mu.Unlock()
	t.once.Do(func() {
		tc := l.cfg.Tune
		cfg := baselines.TuneConfig{Steps: tc.Steps, Warmup: tc.Warmup, MaxViolations: tc.MaxViolations, Seed: l.cfg.ShapeSeed, Step: l.cfg.Step, MinCPU: []float64{a.MinCPU}}
		var res []baselines.Tuned
		if res, t.err = baselines.Tune(ctx, l.prof, []sim.App{s}, cfg); t.err == nil {
			t.t = res[0]
		}
	})
	return t.t, t.err
}

// NewRuleBased is the named application's tuned HPA+VPA autoscaler for
// env (the application, perhaps under a scenario): HPA at the tuned CPU
// target, VPA auto, the application's CPU floor. It keeps its history
// across the episodes it is run for, as it would in a cluster.
func (l *Lab) NewRuleBased(ctx context.Context, env gym.Env, name string) (recommender.Recommender, error) {
	a, _, err := l.App(name)
	if err != nil {
		return nil, err
	}
	t, err := l.CPUTarget(ctx, name)
	if err != nil {
		return nil, err
	}
	f, ok := baselines.Find("hpa+vpa")
	if !ok {
		return nil, fmt.Errorf("lab: no hpa+vpa baseline")
	}
	rec, err := f.NewFor(env.ActionSpace(), a.MinCPU, l.cfg.Step, t.Target)
	if err != nil {
		return nil, fmt.Errorf("lab: %s: rule-based: %w", name, err)
	}
	return rec, nil
}

// RuleBased runs the tuned HPA+VPA autoscaler (NewRuleBased) on env for
// episodes episodes reset with seed, seed+1, …. Observe, when set, sees
// every step.
func (l *Lab) RuleBased(ctx context.Context, env gym.Env, name string, episodes int, seed uint64, observe func(episode, step int, info gym.Info)) ([]train.Episode, error) {
	rec, err := l.NewRuleBased(ctx, env, name)
	if err != nil {
		return nil, err
	}
	return l.Recommend(ctx, env, rec, episodes, seed, observe)
}

// Recommend runs rec on env for episodes episodes reset with seed,
// seed+1, …, through the lab's action mapping.
func (l *Lab) Recommend(ctx context.Context, env gym.Env, rec recommender.Recommender, episodes int, seed uint64, observe func(episode, step int, info gym.Info)) ([]train.Episode, error) {
	eps, err := train.Recommend(ctx, env, rec, l.cfg.Step, train.Config{Episodes: episodes, Seed: seed, Mapping: l.cfg.Mapping, Observe: observe})
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", rec.Name(), err)
	}
	return eps, nil
}

// NewDDPG is a fresh DDPG agent for stateDim-wide states with weights and
// noise drawn from seed and the lab's exploration noise.
func (l *Lab) NewDDPG(stateDim int, seed uint64) (*ddpg.Agent, error) {
	return ddpg.New(stateDim, gym.ActDim, rand.New(rand.NewPCG(seed, 0x71)), ddpg.WithGaussianNoise(l.cfg.Noise))
}

// NewMetaLearners is the DDPG agent conditioned on the embedding (its
// critic loss back-propagated into the meta learner at rate lr, 0: not at
// all) and the meta learner (FLASH over bundles of m trajectories) of a
// meta-training run, with weights from seed.
func NewMetaLearners(cfg meta.Config, m int, seed uint64, lr float64, opts ...ddpg.Option) (*ddpg.Agent, *meta.FLASH, error) {
	rnd := rand.New(rand.NewPCG(seed, 0xF1A54))
	ag, err := ddpg.New(gym.StateDim+cfg.Embed, gym.ActDim, rnd, append(opts, ddpg.WithEmbedding(cfg.Embed, ddpg.CriticLoss))...)
	if err != nil {
		return nil, nil, err
	}
	embedder, err := meta.NewEmbedder(cfg, rnd)
	if err != nil {
		return nil, nil, err
	}
	fo := meta.DefaultOptions(100)
	fo.M, fo.LR = m, lr
	f, err := meta.NewFLASH(embedder, fo)
	return ag, f, err
}

// PlusEnv is TL+'s view of env: a seasonal AR forecaster (two recent lags
// and one daily lag of 30 s steps, fitted on the last two days and refitted
// every 10 steps) and an allocation table with 8 buckets per dimension.
func PlusEnv(env gym.Env) (gym.Env, error) {
	fc, err := forecast.NewOnline(forecast.Config{Order: 2, Seasons: 1, Period: 2880}, 2*2880+64, 10)
	if err != nil {
		return nil, err
	}
	tb, err := transfer.NewTable(gym.BoundsOf(env.ActionSpace()), 8, 0.3)
	if err != nil {
		return nil, err
	}
	return transfer.NewPlus(env, fc, tb)
}

// Affects reports whether scenario sc changes the named application: a
// load scenario changes every application, a payload scenario only those
// with a segment whose size it changes.
func (l *Lab) Affects(name string, sc sim.Scenario) (bool, error) {
	_, a, err := l.App(name)
	if err != nil {
		return false, err
	}
	if sc.ChangesLoad() {
		return true, nil
	}
	return !slices.Equal(sc.Apply(a.Chain), a.Chain), nil
}

// DrawAffected is up to n distinct applications of split that scenario
// sc affects, drawn by rnd.
func (l *Lab) DrawAffected(split string, sc sim.Scenario, n int, rnd *rand.Rand) ([]string, error) {
	if rnd == nil {
		return nil, fmt.Errorf("lab: drawing %s-split applications under %s: no source of randomness", split, sc)
	}
	var names []string
	for _, a := range l.Split(split) {
		ok, err := l.Affects(a, sc)
		if err != nil {
			return nil, err
		}
		if ok {
			names = append(names, a)
		}
	}
	rnd.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return names[:min(n, len(names))], nil
}

// Affected is an application under a scenario that changes it.
type Affected struct{ App, Scenario string }

// DrawAffectedUnits draws, for each scenario (by name), up to n
// applications of split that it affects, from (seed, the scenario's
// index in scenarios): the same draw in every study that asks for it.
func (l *Lab) DrawAffectedUnits(split string, scenarios []string, n int, seed uint64) ([]Affected, error) {
	var out []Affected
	for k, name := range scenarios {
		sc, err := sim.ParseScenario(name)
		if err != nil {
			return nil, err
		}
		apps, err := l.DrawAffected(split, sc, n, rand.New(rand.NewPCG(seed, 0x5E7+uint64(k))))
		if err != nil {
			return nil, err
		}
		for _, a := range apps {
			out = append(out, Affected{App: a, Scenario: name})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("lab: no %s-split application is affected by any of the scenarios %v", split, scenarios)
	}
	return out, nil
}

// ScenarioNames are the names of every instability scenario.
func ScenarioNames() []string {
	var out []string
	for _, s := range sim.Scenarios() {
		out = append(out, s.String())
	}
	return out
}
