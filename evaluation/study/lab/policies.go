package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/internal/atomicfile"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Policy names a policy that cells start from: DDPG trained from scratch
// for Episodes episodes on App (under Scenario, "" for none), in TL+'s
// state when Plus, with weights and episodes from Seed.
type Policy struct {
	App      string
	Scenario string
	Seed     uint64
	Episodes int
	Plus     bool
}

func (p Policy) cell() study.Cell {
	arm := fmt.Sprintf("ddpg-e%d", p.Episodes)
	if p.Plus {
		arm = fmt.Sprintf("ddpg+-e%d", p.Episodes)
	}
	return study.Cell{Arm: arm, App: p.App, Scenario: p.Scenario, Seed: p.Seed}
}

// Trained is a trained policy's record.
type Trained struct {
	// Checkpoint is the agent's file.
	Checkpoint string `json:"checkpoint"`
	// Training is the training episodes' figures.
	Training Curve `json:"training"`
	// Greedy is the trained policy's score without exploration or
	// updates over GreedyEpisodes episodes reset with train.EvalSeed(Seed).
	Greedy  train.Score `json:"greedy"`
	Seconds float64     `json:"seconds"`
}

// GreedyEpisodes is how many episodes score a trained policy.
const GreedyEpisodes = 5

// TrainingSeedOffset is added to a policy's seed for its training
// episodes' seeds: training episode i is reset with Seed+TrainingSeedOffset+i.
const TrainingSeedOffset = 500

// Policies trains the policies that cells start from once, on demand, and
// keeps them (checkpoint and record) in a folder of its own per lab
// configuration, shared by every study that uses the same lab.
type Policies struct {
	lab   *Lab
	store *study.Store

	mu   sync.Mutex
	busy map[string]*sync.Mutex
}

// OpenPolicies opens the policy folder for l under root (root/<hash of
// l's configuration and of where its load shapes came from: the same
// --traces gives other shapes where its files are absent>).
func OpenPolicies(root string, l *Lab) (*Policies, error) {
	b, err := json.Marshal(struct {
		Config
		Load    []string
		Version int
	}{l.cfg, l.Traces(), 1})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	dir := filepath.Join(root, hex.EncodeToString(sum[:6]))
	s, err := study.OpenStore(dir)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, "lab.json"), b, 0o644); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return &Policies{lab: l, store: s, busy: map[string]*sync.Mutex{}}, nil
}

// Dir is the folder the policies are kept in.
func (p *Policies) Dir() string { return p.store.Dir }

func (p *Policies) lock(key string) func() {
	p.mu.Lock()
	m, ok := p.busy[key]
	if !ok {
		m = &sync.Mutex{}
		p.busy[key] = m
	}
	p.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// Env is pol's environment: its application under its scenario, in TL+'s
// state when pol.Plus.
func (p *Policies) Env(pol Policy) (gym.Env, error) {
	sc, err := ParseScenario(pol.Scenario)
	if err != nil {
		return nil, err
	}
	env, err := p.lab.Env(pol.App, sc)
	if err != nil {
		return nil, err
	}
	if pol.Plus {
		return PlusEnv(env)
	}
	return env, nil
}

// Get returns pol trained (training it now unless it was before) and an
// agent holding its weights.
func (p *Policies) Get(ctx context.Context, pol Policy) (Trained, *ddpg.Agent, error) {
	if pol.Episodes < 1 {
		return Trained{}, nil, fmt.Errorf("lab: policy %+v: episodes must be positive", pol)
	}
	c := pol.cell()
	defer p.lock(c.Key())()
	env, err := p.Env(pol)
	if err != nil {
		return Trained{}, nil, err
	}
	ag, err := p.lab.NewDDPG(env.ObservationSpace().Dim(), pol.Seed)
	if err != nil {
		return Trained{}, nil, err
	}
	if !p.store.Has(c) {
		if err := p.train(ctx, pol, c, env, ag); err != nil {
			return Trained{}, nil, err
		}
		// Every caller gets its own agent, loaded from the checkpoint,
		// whether the policy was trained now or before.
		if ag, err = p.lab.NewDDPG(env.ObservationSpace().Dim(), pol.Seed); err != nil {
			return Trained{}, nil, err
		}
	}
	var t Trained
	if err := p.store.Get(c, &t); err != nil {
		return Trained{}, nil, err
	}
	if err := ag.Load(filepath.Join(p.store.Dir, t.Checkpoint)); err != nil {
		return Trained{}, nil, fmt.Errorf("lab: policy %s: %w", c.Key(), err)
	}
	return t, ag, nil
}

func (p *Policies) train(ctx context.Context, pol Policy, c study.Cell, env gym.Env, ag *ddpg.Agent) error {
	start := time.Now()
	eps, err := train.Run(ctx, env, ag, train.Config{Episodes: pol.Episodes, Seed: pol.Seed + TrainingSeedOffset, Explore: true, Mapping: p.lab.cfg.Mapping})
	if err != nil {
		return fmt.Errorf("lab: policy %s: %w", c.Key(), err)
	}
	greedy, err := Score(ctx, env, ag, p.lab.cfg.Mapping, train.EvalSeed(pol.Seed), GreedyEpisodes)
	if err != nil {
		return fmt.Errorf("lab: policy %s: %w", c.Key(), err)
	}
	t := Trained{Checkpoint: filepath.Join("agents", c.Key()+".ckpt"), Greedy: greedy, Seconds: time.Since(start).Seconds()}
	t.Training.Add(eps...)
	if err := os.MkdirAll(filepath.Join(p.store.Dir, "agents"), 0o755); err != nil {
		return err
	}
	if err := ag.Save(filepath.Join(p.store.Dir, t.Checkpoint)); err != nil {
		return fmt.Errorf("lab: policy %s: %w", c.Key(), err)
	}
	return p.store.Put(c, t)
}

// Score is ag's greedy policy (no exploration, no updates) on env over n
// episodes reset with seed, seed+1, ….
func Score(ctx context.Context, env gym.Env, ag agent.Agent, m gym.Mapping, seed uint64, n int) (train.Score, error) {
	eps, err := train.Run(ctx, env, ag, train.Config{Episodes: n, Seed: seed, Mapping: m})
	if err != nil {
		return train.Score{}, err
	}
	return train.Summarise(eps), nil
}

// MetaRun names a meta-training run: DDPG and the meta learner trained
// together for Rounds rounds over the first Apps train-split applications
// (paper §3), with bundles of M trajectories, from Seed.
type MetaRun struct {
	Apps, Rounds, M int
	Seed            uint64
	// NoEmbedding makes it the ablation without an embedding: the same
	// agent trained over the same tasks, rounds and episodes with a zero
	// embedding and the meta learner off (multi-task DDPG).
	NoEmbedding bool `json:",omitempty"`
}

// WithoutEmbedding is run's multi-task DDPG (NoEmbedding).
func (run MetaRun) WithoutEmbedding() MetaRun {
	run.NoEmbedding = true
	return run
}

// Meta is a frozen meta-trained agent and its meta learner.
type Meta struct {
	Run     MetaRun
	Agent   *ddpg.Agent
	FLASH   *meta.FLASH
	Mapping gym.Mapping
	Dir     string
}

// Meta returns run's checkpoint loaded (training it now, or finishing it,
// unless it was before): a fresh agent and meta learner for each call,
// the meta learner frozen. The run trains with the identification
// objective (meta.DefaultContrast every 8 episodes) and episodes starting
// at seed-drawn points of the day, as `aware meta train` does by default;
// with run.NoEmbedding, with a zero embedding and neither the meta
// learner's updates nor its objective.
func (p *Policies) Meta(ctx context.Context, run MetaRun, progress func()) (*Meta, error) {
	if run.Apps < 2 || run.Rounds < 1 || run.M < 1 {
		return nil, fmt.Errorf("lab: meta run %+v: at least 2 applications, 1 round and 1 trajectory per bundle", run)
	}
	dir := p.metaDir(run)
	defer p.lock(dir)()
	// Every AWARE cell asks for the run: once it is trained, load it
	// without building its applications' environments or resuming it.
	if m, err := p.LoadMeta(run); err == nil {
		return m, nil
	}
	cfg := meta.DefaultConfig(gym.StateDim + gym.ActDim + 1)
	ag, f, err := NewMetaLearners(cfg, run.M, run.Seed, 0, ddpg.WithGaussianNoise(p.lab.cfg.Noise))
	if err != nil {
		return nil, err
	}
	names := p.lab.Split(generator.SplitTrain)
	if len(names) < run.Apps {
		return nil, fmt.Errorf("lab: meta run over %d applications: the pool's train split has %d", run.Apps, len(names))
	}
	tasks, err := p.lab.MetaTasks(names[:run.Apps], true, f)
	if err != nil {
		return nil, err
	}
	mc := train.MetaTrainConfig{Rounds: run.Rounds, Seed: run.Seed, Dir: dir, Mapping: p.lab.cfg.Mapping}
	if run.NoEmbedding {
		mc.Fixed = make([]float64, cfg.Embed)
	} else {
		f.SetMetaUpdates(true)
		mc.Contrast = &train.ContrastSchedule{ContrastConfig: meta.DefaultContrast(), Every: 8}
	}
	if progress != nil {
		mc.Progress = func(int, string, train.Episode) { progress() }
	}
	if _, _, err := train.MetaTrain(ctx, tasks, ag, f, mc); err != nil {
		return nil, fmt.Errorf("lab: meta run %+v: %w", run, err)
	}
	return p.LoadMeta(run)
}

// MetaTasks are the named applications as meta-training tasks, each
// registered with f: the application on the simulator (each episode from
// a seed-drawn point of the day when randomStart, else from its trace
// offset), its state followed by a zero embedding of f's size.
func (l *Lab) MetaTasks(names []string, randomStart bool, f *meta.FLASH) ([]train.MetaTask, error) {
	var opts []sim.Option
	if randomStart {
		opts = append(opts, sim.WithRandomStart())
	}
	zero := make([]float64, f.Embedder().Config().Embed)
	tasks := make([]train.MetaTask, len(names))
	for i, name := range names {
		env, err := l.Env(name, 0, opts...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		e, err := gym.Embed(env, zero)
		if err != nil {
			return nil, err
		}
		tasks[i] = train.MetaTask{Name: name, Env: e}
		if err := f.Register(meta.Task{Name: name, StateDim: gym.StateDim, ActionDim: gym.ActDim}); err != nil {
			return nil, err
		}
	}
	return tasks, nil
}

// metaDir is run's folder.
func (p *Policies) metaDir(run MetaRun) string {
	kind := "meta"
	if run.NoEmbedding {
		kind = "multitask"
	}
	return filepath.Join(p.store.Dir, fmt.Sprintf("%s-a%d-r%d-m%d-s%d", kind, run.Apps, run.Rounds, run.M, run.Seed))
}

// LoadMeta loads a meta run trained before (a fresh agent and meta
// learner, the meta learner frozen).
func (p *Policies) LoadMeta(run MetaRun) (*Meta, error) {
	dir := p.metaDir(run)
	m, err := p.lab.loadMeta(dir, run)
	if err != nil {
		return nil, err
	}
	if m.Run.Rounds < run.Rounds {
		return nil, fmt.Errorf("lab: %s holds %d of %d rounds", dir, m.Run.Rounds, run.Rounds)
	}
	m.Run.Rounds = run.Rounds
	return m, nil
}

// MetaFrom loads the run of `aware meta train` in dir (the agent and the
// meta learner that train.MetaTrain checkpointed there, trained with
// bundles of m trajectories; seed seeds the agent's exploration): a fresh
// agent and meta learner, the meta learner frozen. The run must have
// acted through the lab's action mapping. Meta.Run holds m, seed and the
// rounds the run had finished.
func (l *Lab) MetaFrom(dir string, m int, seed uint64) (*Meta, error) {
	mt, err := l.loadMeta(dir, MetaRun{M: m, Seed: seed})
	if err != nil {
		return nil, err
	}
	if mt.Mapping != l.cfg.Mapping {
		return nil, fmt.Errorf("lab: the meta-training run in %s acted through %s actions, this lab through %s", dir, mt.Mapping, l.cfg.Mapping)
	}
	return mt, nil
}

// loadMeta loads the MetaTrain checkpoint in dir into an agent and meta
// learner built for run (bundles of run.M, weights from run.Seed), the meta
// learner frozen; Run.Rounds is the rounds the checkpoint holds.
func (l *Lab) loadMeta(dir string, run MetaRun) (*Meta, error) {
	cfg := meta.DefaultConfig(gym.StateDim + gym.ActDim + 1)
	ag, f, err := NewMetaLearners(cfg, run.M, run.Seed, 0, ddpg.WithGaussianNoise(l.cfg.Noise))
	if err != nil {
		return nil, err
	}
	rounds, m, err := train.LoadMetaTrain(dir, ag, f)
	if err != nil {
		return nil, err
	}
	f.SetMetaUpdates(false)
	run.Rounds = rounds
	return &Meta{Run: run, Agent: ag, FLASH: f, Mapping: m, Dir: dir}, nil
}

// ConvergedNote is a report's warning when policies called converged
// trained fewer episodes than DDPG needs to converge on the pool's
// applications (train.DefaultEpisodes), "" otherwise.
func ConvergedNote(episodes int) string {
	need := train.DefaultEpisodes(train.DDPG)
	if episodes >= need {
		return ""
	}
	return fmt.Sprintf("Note: DDPG needs about %d episodes to converge on these applications (docs/agents.md); the policies called converged here trained %d, so they are references of that budget, not converged policies: a quick run shows directions, not the paper's magnitudes.", need, episodes)
}
