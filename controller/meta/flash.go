package meta

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// Task describes a base learner registered with FLASH: the application it
// manages and the shapes of its states and actions.
type Task struct {
	Name                string
	StateDim, ActionDim int
}

// Options are FLASH's knobs besides the network.
type Options struct {
	// M is the number of trajectories in a bundle (the paper's 20).
	M int
	// Selection picks them (TopM, the paper; BestWorst, FLASH).
	Selection Selection
	// SkipEpisodes leaves the earliest training episodes out of a
	// BestWorst bundle.
	SkipEpisodes int
	// Steps is the length a bundle's trajectories are cut or padded to.
	Steps int
	// Capacity and TTL configure each task's trajectory buffer (TTL in
	// environment steps; see Buffer).
	Capacity, TTL int
	// LR is the Adam learning rate of the base learner's gradient into the
	// meta learner (dissertation Table A.1: 3e-4). Zero keeps that gradient
	// out: the embedder then learns only from the identification objective
	// (Contrast), and AddGrad does nothing.
	LR float64
}

// DefaultOptions are the paper's choices for episodes of episodeSteps steps.
func DefaultOptions(episodeSteps int) Options {
	return Options{M: 20, Selection: TopM, Steps: episodeSteps, Capacity: 32, TTL: 32 * episodeSteps, LR: 3e-4}
}

// FLASH is the meta learner's API for any base learner (dissertation §5.6:
// RegisterBaseLearner, InsertTrajSamples, GetEmbedding,
// ToggleMetaModelUpdate): a learner registers its task, inserts each
// episode it finishes, asks for the embedding of its task and, while meta
// updates are on, hands back the gradient of its loss with respect to that
// embedding. One Embedder serves every task; with updates off it is frozen
// (no gradient, dropout off), as AWARE serves it. It is not safe for
// concurrent use.
type FLASH struct {
	emb  *Embedder
	opts Options
	opt  []*rl.Adam
	// contrastOpt steps the identification objective (Contrast), apart
	// from the base learner's gradient steps.
	contrastOpt []*rl.Adam
	tasks       map[string]*flashTask
	updates     bool
	current     string    // the task of the Embedder's last Embed
	bundle      []float64 // workspace
	sums        []float64 // workspace: a bundle's summaries
}

type flashTask struct {
	Task
	buf       *Buffer
	episodes  int
	embedding []float64
	stale     bool
	// summaries holds, with meta updates off, the summary of each
	// buffered trajectory by episode (Embedder.Summarise) under the
	// weights whose fingerprint is weights.
	summaries map[int][]float64
	weights   uint64
}

// NewFLASH serves the embedder emb, with meta updates off.
func NewFLASH(emb *Embedder, opts Options) (*FLASH, error) {
	if emb == nil {
		return nil, errors.New("meta: NewFLASH: nil embedder")
	}
	if opts.M <= 0 || opts.Steps <= 0 || !(opts.LR >= 0) || math.IsInf(opts.LR, 0) {
		return nil, fmt.Errorf("meta: NewFLASH: M %d and steps %d must be positive, learning rate %v finite and not negative", opts.M, opts.Steps, opts.LR)
	}
	if _, err := NewBuffer(opts.Capacity, opts.TTL); err != nil {
		return nil, fmt.Errorf("meta: NewFLASH: %w", err)
	}
	f := &FLASH{emb: emb, opts: opts, tasks: map[string]*flashTask{}}
	for range emb.Params() {
		f.opt = append(f.opt, rl.NewAdam(opts.LR))
	}
	emb.SetTraining(false)
	return f, nil
}

// Register adds a base learner's task. Its elements [s, a, r] must have the
// embedder's width.
func (f *FLASH) Register(t Task) error {
	if t.Name == "" {
		return errors.New("meta: Register: empty task name")
	}
	if _, ok := f.tasks[t.Name]; ok {
		return fmt.Errorf("meta: Register: task %q is already registered", t.Name)
	}
	if w := t.StateDim + t.ActionDim + 1; t.StateDim <= 0 || t.ActionDim <= 0 || w != f.emb.cfg.Features {
		return fmt.Errorf("meta: Register: task %q: state %d + action %d + reward 1 must be the embedder's %d features", t.Name, t.StateDim, t.ActionDim, f.emb.cfg.Features)
	}
	buf, _ := NewBuffer(f.opts.Capacity, f.opts.TTL)
	f.tasks[t.Name] = &flashTask{Task: t, buf: buf, embedding: make([]float64, f.emb.cfg.Embed), stale: true}
	return nil
}

// Unregister removes a task and its trajectories (a host whose base
// learner is gone). Removing a task that is not registered does nothing.
// A pending gradient of its current embedding is applied first.
func (f *FLASH) Unregister(name string) {
	if _, ok := f.tasks[name]; !ok {
		return
	}
	if f.current == name {
		if f.updates {
			f.Step()
		}
		f.current = ""
	}
	delete(f.tasks, name)
}

func (f *FLASH) task(name string) (*flashTask, error) {
	t, ok := f.tasks[name]
	if !ok {
		return nil, fmt.Errorf("meta: task %q is not registered", name)
	}
	return t, nil
}

// Insert adds one finished episode of task: states[i], actions[i] and
// rewards[i] of its steps, normalised as the learner normalises them. Its
// episode reward is the sum of the rewards.
func (f *FLASH) Insert(task string, states, actions [][]float64, rewards []float64) error {
	t, err := f.task(task)
	if err != nil {
		return err
	}
	n := len(rewards)
	if n == 0 || len(states) != n || len(actions) != n {
		return fmt.Errorf("meta: Insert: task %q: %d states, %d actions and %d rewards must be as many and not none", task, len(states), len(actions), n)
	}
	w := f.emb.cfg.Features
	el := make([]float64, 0, n*w)
	total := 0.0
	for i := range n {
		if len(states[i]) != t.StateDim || len(actions[i]) != t.ActionDim {
			return fmt.Errorf("meta: Insert: task %q step %d: state of %d and action of %d values, want %d and %d", task, i, len(states[i]), len(actions[i]), t.StateDim, t.ActionDim)
		}
		el = append(el, states[i]...)
		el = append(el, actions[i]...)
		el = append(el, rewards[i])
		total += rewards[i]
	}
	if err := t.buf.Add(Trajectory{Elements: el, Steps: n, Reward: total, Episode: t.episodes}, w); err != nil {
		return err
	}
	t.episodes++
	t.stale = true
	return nil
}

// Embedding writes task's embedding into dst (grown as needed) and returns
// it: the embedder's output for the bundle its buffer selects now, or zeros
// before its first episode. It is recomputed after each Insert; computing
// another task's embedding while meta updates are on applies the pending
// gradient first (Step).
func (f *FLASH) Embedding(dst []float64, task string) ([]float64, error) {
	t, err := f.task(task)
	if err != nil {
		return nil, err
	}
	if t.stale || (f.updates && f.current != task) {
		if f.updates {
			f.Step()
		}
		switch trajs := t.buf.Select(f.opts.M, f.opts.Selection, f.opts.SkipEpisodes); {
		case len(trajs) == 0:
			clear(t.embedding)
		case f.updates:
			f.bundle = Bundle(f.bundle, trajs, f.opts.Steps, f.emb.cfg.Features)
			f.emb.Embed(t.embedding, f.bundle, len(trajs), f.opts.Steps)
			f.current = task
		default:
			f.embedFrozen(t, trajs)
			f.current = ""
		}
		t.stale = false
	}
	dst = grow(dst, len(t.embedding))
	copy(dst, t.embedding)
	return dst, nil
}

// embedFrozen embeds trajs, t's bundle, with meta updates off: the frozen
// embedder gives every trajectory the same summary each time it is in a
// bundle, so only those not summarised yet under the current weights run
// through the BiGRU (one per episode instead of M). It is Embed's result:
// the same summaries pooled in the same order.
func (f *FLASH) embedFrozen(t *flashTask, trajs []Trajectory) {
	h2 := 2 * f.emb.cfg.Hidden
	if w := f.emb.fingerprint(); t.summaries == nil || w != t.weights {
		t.summaries, t.weights = map[int][]float64{}, w
	}
	var missing []Trajectory
	for _, tr := range trajs {
		if _, ok := t.summaries[tr.Episode]; !ok {
			missing = append(missing, tr)
		}
	}
	if len(missing) > 0 {
		f.bundle = Bundle(f.bundle, missing, f.opts.Steps, f.emb.cfg.Features)
		f.sums = grow(f.sums, len(missing)*h2)
		f.emb.Summarise(f.sums, f.bundle, len(missing), f.opts.Steps)
		for i, tr := range missing {
			t.summaries[tr.Episode] = slices.Clone(f.sums[i*h2 : (i+1)*h2])
		}
	}
	f.sums = grow(f.sums, len(trajs)*h2)
	for i, tr := range trajs {
		copy(f.sums[i*h2:(i+1)*h2], t.summaries[tr.Episode])
	}
	f.emb.EmbedSummaries(t.embedding, f.sums, len(trajs))
	if len(t.summaries) > t.buf.Len() { // trajectories have left the buffer
		held := make(map[int]bool, t.buf.Len())
		for _, it := range t.buf.items {
			held[it.Episode] = true
		}
		maps.DeleteFunc(t.summaries, func(ep int, _ []float64) bool { return !held[ep] })
	}
}

// SetMetaUpdates turns meta-model updates on (training: dropout on,
// gradients accepted) or off (frozen). Turning them off applies any
// pending gradient first.
func (f *FLASH) SetMetaUpdates(on bool) {
	if f.updates && !on {
		f.Step()
	}
	f.updates = on
	f.emb.SetTraining(on)
	for _, t := range f.tasks {
		t.stale = true // the embedding depends on the dropout mode
		t.summaries = nil
	}
}

// Embedder returns the meta learner's network (shared: with meta updates
// on it is trained by FLASH).
func (f *FLASH) Embedder() *Embedder { return f.emb }

// MetaUpdates reports whether meta-model updates are on.
func (f *FLASH) MetaUpdates() bool { return f.updates }

// AddGrad adds the gradient of a base learner's loss with respect to task's
// current embedding (from Embedding) to the meta learner's pending update;
// before the task's first episode (a zero embedding), and with Options.LR
// zero, it does nothing. It is an error while updates are off or when
// another task's embedding was computed since.
func (f *FLASH) AddGrad(task string, d []float64) error {
	if !f.updates {
		return errors.New("meta: AddGrad: meta updates are off")
	}
	t, err := f.task(task)
	if err != nil {
		return err
	}
	if t.buf.Len() == 0 {
		// Before its first episode a task's embedding is zeros, not the
		// embedder's output: the gradient has nowhere to go.
		return nil
	}
	if f.current != task {
		return fmt.Errorf("meta: AddGrad: the embedder last embedded task %q, not %q: call Embedding first", f.current, task)
	}
	if f.opts.LR == 0 {
		return nil // the base learner's gradient is kept out (Options.LR)
	}
	f.emb.AddGrad(d)
	return nil
}

// Step back-propagates the pending gradient through the embedder and
// applies one Adam update; it does nothing when none is pending. The
// current embedding is then stale.
func (f *FLASH) Step() {
	if !f.backprop(f.opt) {
		return
	}
	if t, ok := f.tasks[f.current]; ok {
		t.stale = true
	}
}

// backprop back-propagates the embedder's pending gradient into freshly
// zeroed parameter gradients and steps opt (one optimiser per parameter
// group) on them; it reports whether any gradient was pending.
func (f *FLASH) backprop(opt []*rl.Adam) bool {
	f.emb.ZeroGrad()
	if !f.emb.Backward(nil) {
		return false
	}
	for i, p := range f.emb.Params() {
		opt[i].Step(p)
	}
	return true
}
