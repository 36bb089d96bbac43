package agents

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/mpaenv"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// Reasons a recommendation is withheld (status.recommendation.withheld).
const (
	ReasonCheckpointUnreadable = "CheckpointUnreadable"
	ReasonNaNAction            = "NaNAction"
	ReasonNaNReward            = "NaNReward"
	// ReasonInvalidPolicy is the event on an MPA that names the runner
	// but whose policy the controller refuses: it gets no agent.
	ReasonInvalidPolicy = "InvalidPolicy"
)

// worker is one MPA's agent. Its methods run on its own goroutine only.
type worker struct {
	r      *Runner
	key    types.NamespacedName
	uid    types.UID
	app    string // the trajectory store's key
	dir    string // checkpoint folder
	rel    string // dir relative to the runner's checkpoint directory
	seed   uint64
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}

	ag     agent.Agent
	frozen agent.Policy // in SERVING, the agent's policy alone (ag is nil)
	boot   bool
	space  gym.Space
	bounds gym.Bounds
	env    *mpaenv.Env
	st     State
	act    []float64
	tgt    []float64

	// The last checkpoint written since the runner started hosting the
	// agent (zero: none yet), and the agent's update count in the
	// checkpoint on disk (the one it was loaded from, until it saves).
	saved        time.Time
	savedUpdates int
	// The last copy to the object store: when, and of which stage.
	uploaded      time.Time
	uploadedStage string

	// With the meta learner: the worker's task, the last episode of the
	// store inserted into it and where reading resumes, and the current
	// embedding (nil without the meta learner).
	task        string
	metaEpisode int64
	metaFrom    time.Time
	z           []float64

	// The MPA generation and annotation value whose unusable initial
	// policy an event reported (warned: one did).
	policyWarned     bool
	policyWarnedGen  int64
	policyWarnedName string
}

// errInitialPolicy: the MPA's initial policy cannot be used; its
// recommendation is withheld and the load is tried again a step later.
var errInitialPolicy = errors.New("the initial policy cannot be used")

func (w *worker) run(ctx context.Context) {
	w.log.Info("agents: hosting an agent")
	defer w.stop()
	for ctx.Err() == nil {
		if err := w.cycle(ctx); err != nil && ctx.Err() == nil {
			w.r.met.errors.Inc()
			w.log.Warn("agents: agent cycle failed; retrying a step later", "err", err)
			w.env = nil // re-read the MPA's bounds
			_ = sleep(ctx, w.r.cfg.step)
		}
	}
}

// stop frees what the runner holds for the agent beyond the worker: its
// task in the shared meta learner and its count among frozen agents.
func (w *worker) stop() {
	w.thaw()
	if f := w.r.cfg.meta; f != nil && w.task != "" {
		w.r.metaMu.Lock()
		f.Unregister(w.task)
		w.r.metaMu.Unlock()
	}
}

// cycle does what the MPA's stage asks for once: one round of offline
// training, or one acting episode.
func (w *worker) cycle(ctx context.Context) error {
	m, pol, err := w.read(ctx)
	if err != nil {
		return err
	}
	stage := stageOf(m)
	if w.frozen != nil && stage != v1alpha1.StageServing {
		// Retraining: the agent resumes from the checkpoint written when
		// it entered SERVING (its weights did not change since).
		w.thaw()
	}
	if w.ag == nil && w.frozen == nil {
		if err := w.load(ctx, m, pol); errors.Is(err, errInitialPolicy) {
			return sleep(ctx, w.r.cfg.step) // withheld: HPA+VPA acts
		} else if err != nil {
			return err
		}
	}
	switch {
	case pol.Agent != nil && stage == v1alpha1.StageOffline:
		return w.offline(ctx, m)
	case pol.Agent == nil || autoscaler.AgentActs(stage):
		return w.episode(ctx)
	default: // INITIALIZED: the controller moves it on at its next step
		return sleep(ctx, w.r.cfg.step)
	}
}

func (w *worker) read(ctx context.Context) (*v1alpha1.MultidimPodAutoscaler, autoscaler.Policy, error) {
	var m v1alpha1.MultidimPodAutoscaler
	if err := w.r.c.Get(ctx, w.key, &m); err != nil {
		return nil, autoscaler.Policy{}, fmt.Errorf("MPA %s: %w", w.key, err)
	}
	if m.UID != w.uid {
		return nil, autoscaler.Policy{}, fmt.Errorf("MPA %s was re-created (UID %s, hosting %s)", w.key, m.UID, w.uid)
	}
	pol, err := autoscaler.PolicyOf(&m)
	if err != nil {
		return nil, autoscaler.Policy{}, fmt.Errorf("MPA %s: %w", w.key, err)
	}
	return &m, pol, nil
}

func stageOf(m *v1alpha1.MultidimPodAutoscaler) v1alpha1.AgentStage {
	if m.Status.Agent == nil || m.Status.Agent.Stage == "" {
		return v1alpha1.StageInitialized
	}
	return m.Status.Agent.Stage
}

// freeze keeps the agent's policy alone (an agent in SERVING only acts):
// its critics, optimiser state and replay memory are freed. The checkpoint
// written on entering SERVING holds them.
func (w *worker) freeze() {
	f, ok := w.ag.(agent.Freezer)
	if !ok {
		return
	}
	w.frozen, w.ag = f.Freeze(), nil
	w.r.met.frozen.Inc()
	w.log.Info("agents: serving with the policy alone; training state freed")
}

// thaw drops the frozen policy; the next cycle loads the agent from its
// checkpoint.
func (w *worker) thaw() {
	if w.frozen != nil {
		w.frozen = nil
		w.r.met.frozen.Dec()
	}
}

// policy is what acts: the frozen policy in SERVING, else the agent.
func (w *worker) policy() agent.Policy {
	if w.frozen != nil {
		return w.frozen
	}
	return w.ag
}

// load makes the MPA's agent and restores its checkpoint. An unreadable
// checkpoint is moved aside (kept), the step's recommendation withheld with
// the cause, and a fresh agent takes over. With no checkpoint at all, an
// MPA with an initial policy (AnnotationInitialPolicy) starts from it, and
// its first checkpoint is written at once; a policy that cannot be used
// withholds the step's recommendation and load returns errInitialPolicy.
func (w *worker) load(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol autoscaler.Policy) error {
	w.boot = pol.Agent != nil && pol.Agent.Bootstraps()
	w.space = gym.ActionSpace(pol.GymBounds())
	w.bounds = gym.BoundsOf(w.space)
	w.act, w.tgt = make([]float64, gym.ActDim), make([]float64, gym.ActDim)
	fresh := func() (agent.Agent, error) {
		ag, err := w.r.cfg.factory(w.r.stateDim(), gym.ActDim, w.boot, w.seed)
		if err != nil {
			return nil, fmt.Errorf("new agent for %s: %w", w.key, err)
		}
		return ag, nil
	}
	ag, err := fresh()
	if err != nil {
		return err
	}
	w.st = State{UID: string(w.uid), MPA: w.key.String(), Actions: w.r.cfg.mapping.String()}
	// A newer copy in the object store (the runner's disk was lost) comes
	// first; an unreadable copy is kept aside there, and the local
	// checkpoint, if any, is used.
	var remoteErr error
	if rem := w.r.cfg.remote; rem != nil {
		restored, err := rem.restore(ctx, w.rel, w.dir, time.Now())
		switch {
		case errors.Is(err, errUnreadableRemote):
			remoteErr = err
			w.log.Error("agents: "+err.Error(), "dir", w.dir)
		case err != nil:
			return err // the store is unreachable: retry rather than start afresh
		case restored:
			w.log.Info("agents: checkpoint restored from the object store", "key", rem.key(w.rel))
		}
	}
	// local loads dir's checkpoint into ag, a fresh agent, or into a
	// fresh agent of the kind the checkpoint names (an initial policy's
	// agent of the other kind), and returns the agent loaded.
	local := func(ag agent.Agent) (agent.Agent, error) {
		st, err := ReadState(w.dir)
		if err != nil {
			return nil, err
		}
		if was, err := st.Mapping(); err != nil {
			return nil, err
		} else if was != w.r.cfg.mapping {
			return nil, fmt.Errorf("its agent acted through %s actions, this runner's agents act through %s", was, w.r.cfg.mapping)
		}
		if boot := st.Kind == KindBCQ; st.Kind != "" && boot != w.boot {
			if ag, err = w.r.cfg.factory(w.r.stateDim(), gym.ActDim, boot, w.seed); err != nil {
				return nil, fmt.Errorf("new %s agent for %s: %w", st.Kind, w.key, err)
			}
		}
		if err := ag.Load(filepath.Join(w.dir, agentFile)); err != nil {
			return nil, err
		}
		w.st = st
		w.r.met.resumes.Inc()
		w.log.Info("agents: resumed from checkpoint", "stage", st.Stage, "episode", st.Episode, "updates", st.Updates, "steps", st.Steps)
		return ag, nil
	}
	got, err := local(ag)
	if err == nil {
		ag = got
	}
	initial, hasInitial := initialPolicyOf(m)
	fromPolicy := false
	// movedTo is where an unusable local checkpoint went when the object
	// store then had no copy to put in its place (the folder is gone).
	movedTo := ""
	if rem := w.r.cfg.remote; err != nil && !errors.Is(err, fs.ErrNotExist) && rem != nil && remoteErr == nil {
		// The local checkpoint is unusable but was not older than the
		// bucket's copy (the same save): move it aside and fall back to
		// that copy, rather than start a fresh agent whose first save
		// would overwrite it.
		to, qerr := quarantine(w.dir, time.Now())
		if qerr != nil {
			return qerr
		}
		restored, rerr := rem.restore(ctx, w.rel, w.dir, time.Now())
		if rerr != nil && !errors.Is(rerr, errUnreadableRemote) {
			return rerr // the store is unreachable: retry, the local copy is kept aside
		}
		if !restored {
			movedTo = to
		} else {
			cause := err
			if ag, err = fresh(); err != nil {
				return err
			}
			var got agent.Agent
			if got, err = local(ag); err == nil {
				ag = got
				w.log.Error("agents: the local checkpoint could not be used; the object store's copy was", "cause", cause.Error(), "movedTo", to, "key", rem.key(w.rel))
			} else {
				w.log.Error("agents: the local checkpoint could not be used and was moved aside; the object store's copy cannot be used either", "cause", cause.Error(), "movedTo", to)
			}
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) && remoteErr != nil:
		msg := fmt.Sprintf("the agent's checkpoint could not be used (%v); a fresh agent starts", remoteErr)
		w.log.Error("agents: "+msg, "dir", w.dir)
		w.withhold(ctx, m, ReasonCheckpointUnreadable, msg)
	case errors.Is(err, fs.ErrNotExist) && hasInitial:
		var info loadedPolicy
		if ag, info, err = w.initialPolicy(initial, ag); err != nil {
			w.policyUnusable(ctx, m, initial, err)
			return errInitialPolicy
		}
		w.st.Kind, w.st.Updates = info.Kind, info.Updates
		fromPolicy = true
		w.log.Info("agents: no checkpoint; starting from the initial policy", "policy", initial, "dir", w.r.policyPath(initial), "kind", info.Kind, "updates", info.Updates)
	case errors.Is(err, fs.ErrNotExist):
		w.log.Info("agents: no checkpoint; a fresh agent", "bootstraps", w.boot)
	case err != nil:
		// The agent may hold part of the bad state: start from a new one.
		cause := err
		if ag, err = fresh(); err != nil {
			return err
		}
		to, qerr := movedTo, error(nil)
		if to == "" {
			to, qerr = quarantine(w.dir, time.Now())
		}
		msg := fmt.Sprintf("the agent's checkpoint could not be used (%v); it was moved to %s and a fresh agent starts", cause, to)
		if qerr != nil {
			msg = fmt.Sprintf("the agent's checkpoint could not be used (%v) nor moved aside (%v); a fresh agent starts", cause, qerr)
		}
		w.log.Error("agents: "+msg, "dir", w.dir)
		w.withhold(ctx, m, ReasonCheckpointUnreadable, msg)
	}
	w.ag = ag
	w.savedUpdates = w.st.Updates
	if w.task == "" { // else registered by an earlier load (before SERVING)
		if err := w.startMeta(ctx); err != nil {
			return err
		}
	}
	if fromPolicy {
		// From now on the agent has a checkpoint of its own: a restart
		// resumes it, not the initial policy.
		if err := w.save(ctx, m, false); err != nil {
			return err
		}
	}
	if w.boot && !w.st.RecordsUntil.IsZero() {
		// The replay memory is not checkpointed: refill it with the
		// records already trained on.
		data, _, err := w.records(ctx, time.Time{}, w.st.RecordsUntil)
		if err != nil {
			return err
		}
		for _, t := range data {
			ag.Observe(t)
		}
	}
	return nil
}

// startMeta registers the MPA with the meta learner and fills its buffer
// with the MPA's best complete episodes in the store.
func (w *worker) startMeta(ctx context.Context) error {
	f := w.r.cfg.meta
	if f == nil {
		return nil
	}
	w.task, w.metaEpisode = w.app+"#"+string(w.uid), -1
	top, err := w.r.store.Top(ctx, w.app, 32)
	if err != nil {
		return fmt.Errorf("episodes of %s for the meta learner: %w", w.app, err)
	}
	slices.SortFunc(top, func(a, b trajectory.Trajectory) int { return cmp.Compare(a.Episode.Episode, b.Episode.Episode) })
	w.r.metaMu.Lock()
	defer w.r.metaMu.Unlock()
	if err := f.Register(meta.Task{Name: w.task, StateDim: gym.StateDim, ActionDim: gym.ActDim}); err != nil {
		return err
	}
	for _, tr := range top {
		w.insert(tr)
	}
	return w.embed()
}

// refreshMeta inserts the MPA's episodes completed since the last refresh
// into the meta learner and recomputes the embedding.
func (w *worker) refreshMeta(ctx context.Context) error {
	if w.r.cfg.meta == nil {
		return nil
	}
	trs, err := w.r.store.Range(ctx, w.app, w.metaFrom, time.Now())
	if err != nil {
		return fmt.Errorf("episodes of %s for the meta learner: %w", w.app, err)
	}
	w.r.metaMu.Lock()
	defer w.r.metaMu.Unlock()
	for _, tr := range trs {
		w.insert(tr)
	}
	return w.embed()
}

// insert adds a complete, usable episode newer than the last inserted one
// (metaMu held).
func (w *worker) insert(tr trajectory.Trajectory) {
	n := len(tr.Steps)
	if tr.Episode.Episode <= w.metaEpisode || n == 0 || tr.Steps[0].T != 0 || !tr.Steps[n-1].Done {
		return
	}
	states, actions, rewards := make([][]float64, 0, n), make([][]float64, 0, n), make([]float64, 0, n)
	for i := range tr.Steps {
		s := &tr.Steps[i]
		if !usable(s, w.space) {
			return
		}
		states = append(states, s.State)
		actions = append(actions, w.r.cfg.mapping.Encode(make([]float64, gym.ActDim), s.Action, gym.Current(s.State, w.bounds), w.bounds))
		rewards = append(rewards, s.Reward)
	}
	if err := w.r.cfg.meta.Insert(w.task, states, actions, rewards); err != nil {
		w.log.Warn("agents: episode not given to the meta learner", "episode", tr.Episode.Episode, "err", err)
		return
	}
	w.metaEpisode, w.metaFrom = tr.Episode.Episode, tr.Steps[n-1].Time
}

// embed recomputes the embedding (metaMu held) and hands it to an agent
// that trains with one per task.
func (w *worker) embed() error {
	z, err := w.r.cfg.meta.Embedding(w.z, w.task)
	if err != nil {
		return err
	}
	w.z = z
	if el, ok := w.ag.(agent.EmbeddingLearner); ok {
		if err := el.SetEmbedding(0, z); err != nil {
			return err
		}
	}
	return nil
}

// withEmbedding is the agent's state: the AWARE state, then the embedding.
func (w *worker) withEmbedding(s []float64) []float64 { return slices.Concat(s, w.z) }

// records are the OFFLINE transitions recorded in [from, to] (from zero:
// since the first record), with the embedding, and the time of the last
// record read (see Transitions).
func (w *worker) records(ctx context.Context, from, to time.Time) ([]agent.Transition, time.Time, error) {
	if from.IsZero() {
		from = time.Unix(0, 0)
	}
	trs, err := w.r.store.Range(ctx, w.app, from, to.Add(time.Nanosecond))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("records of %s: %w", w.app, err)
	}
	data, until := Transitions(trs, w.r.cfg.mapping, w.space, string(v1alpha1.StageOffline), w.maxGap())
	w.embedAll(data)
	return data, until, nil
}

// embedAll appends the embedding to the states of transitions of the
// store (which records the AWARE state alone).
func (w *worker) embedAll(data []agent.Transition) {
	if w.z == nil {
		return
	}
	for i := range data {
		data[i].State, data[i].Next = w.withEmbedding(data[i].State), w.withEmbedding(data[i].Next)
	}
}

// maxGap is the longest time between two records that are consecutive
// steps (the controller steps once per round; a late round is up to one
// more step late).
func (w *worker) maxGap() time.Duration { return w.r.cfg.step * 5 / 2 }

// offline trains the agent from the fallback's records it has not yet
// seen, checkpoints it, and waits a step.
func (w *worker) offline(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler) error {
	if err := w.refreshMeta(ctx); err != nil {
		return err
	}
	data, until, err := w.records(ctx, w.st.RecordsUntil, time.Now())
	if err != nil {
		return err
	}
	if len(data) > 0 {
		for _, t := range data {
			w.ag.Observe(t)
		}
		w.st.RecordsUntil = until
		w.st.OfflineTransitions += len(data)
		// The updates are owed, not dropped: while the replay holds less
		// than a minibatch the agent cannot update, and those updates are
		// made up once it can (the records of a short OFFLINE stage would
		// otherwise train it a fraction of what the same records train at
		// once: 72 updates instead of 198 for 10 episodes of 10 steps
		// and minibatches of 64).
		w.st.OfflineOwed += w.r.cfg.offlineUpdates * len(data)
		if err := w.train(ctx, v1alpha1.StageOffline, w.st.OfflineOwed); err != nil {
			return err
		}
		// Rounds that did not update the agent (fewer records than a
		// minibatch) change nothing a checkpoint holds: the records
		// since the last one are read again after a restart.
		trained := w.st.Updates > w.savedUpdates
		if trained && (w.saved.IsZero() || time.Since(w.saved) >= w.r.cfg.offlineEvery) {
			if err := w.save(ctx, m, false); err != nil {
				return err
			}
		}
		w.log.Debug("agents: trained on records", "transitions", len(data), "updates", w.st.Updates)
	}
	return sleep(ctx, w.r.cfg.step)
}

// train runs up to n updates holding a training slot (released every 64
// updates so that other agents train too).
func (w *worker) train(ctx context.Context, stage v1alpha1.AgentStage, n int) error {
	for n > 0 {
		select {
		case w.r.pool <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		began := time.Now()
		k := min(n, 64)
		var err error
		for range k {
			var st agent.Stats
			if st, err = w.ag.Update(); err != nil || !st.Updated {
				n = k // too little experience yet: stop
				break
			}
			w.st.Updates = st.Updates
			if stage == v1alpha1.StageOffline {
				w.st.OfflineOwed--
			}
			w.r.met.updates.WithLabelValues(string(stage)).Inc()
		}
		if r, ok := w.ag.(agent.Releaser); ok {
			// Between training turns an agent keeps no minibatch
			// workspaces: a BCQ agent's are 5 MiB, and the runner hosts
			// an agent per MPA but trains --trainers at a time.
			r.Release()
		}
		<-w.r.pool
		w.r.met.train.Observe(time.Since(began).Seconds())
		if err != nil {
			return fmt.Errorf("training the agent of %s: %w", w.key, err)
		}
		n -= k
	}
	return nil
}

// episode acts one episode through mpaenv: exploring and training in
// ONLINE, with the frozen policy in SERVING. It returns early when the
// stage no longer lets the agent act.
func (w *worker) episode(ctx context.Context) error {
	if w.env == nil {
		env, err := mpaenv.New(ctx, w.r.c, w.key, w.r.obs, w.r.cfg.envOpts...)
		if err != nil {
			return err
		}
		w.env, w.space = env, env.ActionSpace()
		w.bounds = gym.BoundsOf(w.space)
	}
	if err := w.refreshMeta(ctx); err != nil {
		return err
	}
	obs, _, err := w.env.Reset(ctx, 0)
	if err != nil {
		return err
	}
	obs = w.withEmbedding(obs)
	for {
		m, pol, err := w.read(ctx)
		if err != nil {
			return err
		}
		stage := stageOf(m)
		if pol.Agent != nil && !autoscaler.AgentActs(stage) || w.frozen != nil && stage != v1alpha1.StageServing {
			return nil
		}
		if string(stage) != w.st.Stage {
			// Entering SERVING freezes these weights; a restart in any
			// stage resumes them. Offline updates still owed are owed for
			// the records of a stage that is over.
			w.st.OfflineOwed = 0
			if err := w.save(ctx, m, true); err != nil {
				return err
			}
		}
		if stage == v1alpha1.StageServing && w.frozen == nil {
			w.freeze()
		}
		explore := pol.Agent == nil || stage == v1alpha1.StageOnline
		w.policy().Act(w.act, obs, explore)
		if r, ok := w.policy().(agent.Releaser); ok {
			// The step waits a whole interval: an idle agent keeps
			// no workspaces (1000 agents' acting buffers were 50 MB).
			r.Release()
		}
		if i := nonFinite(w.act); i >= 0 {
			w.withhold(ctx, m, ReasonNaNAction, fmt.Sprintf("the agent's %s output is %g in state %v", w.space.Names[i], w.act[i], obs))
			return sleep(ctx, w.r.cfg.step)
		}
		cur := gym.Current(obs, w.bounds)
		w.r.cfg.mapping.Target(w.tgt, w.act, cur, w.bounds)
		next, reward, _, trunc, info, err := w.env.Step(ctx, w.tgt)
		if err != nil {
			return err
		}
		next = w.withEmbedding(next)
		w.st.Steps++
		w.r.met.steps.WithLabelValues(string(stage)).Inc()
		if !finite(reward) || nonFinite(next) >= 0 {
			w.withhold(ctx, m, ReasonNaNReward, fmt.Sprintf("the step's reward %g or state %v is not a number; the transition is dropped", reward, next))
			return sleep(ctx, w.r.cfg.step)
		}
		if explore {
			// The action as the controller applied it (after the MPA's
			// per-step bounds), as the agent's action.
			applied := info.Metrics.Allocation().Vector(make([]float64, gym.ActDim))
			w.ag.Observe(agent.Transition{State: obs, Action: w.r.cfg.mapping.Encode(applied, applied, cur, w.bounds), Reward: reward, Next: next})
			if err := w.train(ctx, stage, w.r.cfg.updates); err != nil {
				return err
			}
		}
		obs = next
		if trunc {
			w.st.Episodes++
			w.r.met.episodes.Inc()
			return w.save(ctx, m, true)
		}
	}
}

// save checkpoints the agent, then its State, and copies the checkpoint to
// the object store when one is configured: always when force is set (a
// stage change, an episode's end), else at most every upload interval. A
// failed copy is logged and retried at the next save; the local checkpoint
// stands.
func (w *worker) save(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, force bool) error {
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint of %s: %w", w.key, err)
	}
	if w.ag != nil { // a frozen agent's weights are those saved on entering SERVING
		if err := w.ag.Save(filepath.Join(w.dir, agentFile)); err != nil {
			return fmt.Errorf("checkpoint of %s: %w", w.key, err)
		}
	}
	w.st.Stage = string(stageOf(m))
	if m.Status.Agent != nil {
		w.st.Episode = m.Status.Agent.Episode
	}
	w.st.Saved = time.Now().UTC()
	if err := writeState(w.dir, w.st); err != nil {
		return fmt.Errorf("checkpoint of %s: %w", w.key, err)
	}
	w.r.met.checkpoints.Inc()
	w.saved, w.savedUpdates = time.Now(), w.st.Updates
	rem := w.r.cfg.remote
	if rem == nil || (!force && w.st.Stage == w.uploadedStage && time.Since(w.uploaded) < rem.every) {
		return nil
	}
	if err := rem.upload(ctx, w.rel, w.dir); err != nil {
		w.r.met.uploads.WithLabelValues("error").Inc()
		w.log.Warn("agents: checkpoint not copied to the object store; retried at the next save", "err", err)
		return nil
	}
	w.r.met.uploads.WithLabelValues("ok").Inc()
	w.uploaded, w.uploadedStage = time.Now(), w.st.Stage
	return nil
}

// withhold tells the controller that this step has no recommendation and
// why (it acts on HPA+VPA), and records a Warning event. Failures are
// logged: the controller holds a stale recommendation anyway.
func (w *worker) withhold(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, reason, msg string) {
	w.r.cfg.recorder.Event(m, corev1.EventTypeWarning, reason, msg)
	w.markWithheld(ctx, m, reason, msg)
}

// policyUnusable withholds the step's recommendation of an MPA whose
// initial policy name cannot be used (cause), and records one Warning
// event and log line per generation of the MPA and value of the
// annotation: the marker is renewed every step (a stale one would make
// the controller hold rather than act on HPA+VPA), the event is not.
func (w *worker) policyUnusable(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, name string, cause error) {
	where := w.r.policyPath(name)
	if where == "" {
		where = "(no policies folder)"
	}
	msg := fmt.Sprintf("annotation %s: %q: the initial policy %s cannot be used: %v; no agent starts until it can (HPA+VPA acts)",
		AnnotationInitialPolicy, name, where, cause)
	if !w.policyWarned || w.policyWarnedGen != m.Generation || w.policyWarnedName != name {
		w.policyWarned, w.policyWarnedGen, w.policyWarnedName = true, m.Generation, name
		w.log.Warn("agents: "+msg, "annotation", AnnotationInitialPolicy, "policy", name, "path", where)
		w.r.cfg.recorder.Event(m, corev1.EventTypeWarning, ReasonInitialPolicyUnreadable, msg)
	}
	w.markWithheld(ctx, m, ReasonInitialPolicyUnreadable, msg)
}

// markWithheld writes the withheld marker of the step (reason, msg) into
// the MPA's status and counts it.
func (w *worker) markWithheld(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, reason, msg string) {
	w.r.met.withheld.WithLabelValues(reason).Inc()
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	orig := m.DeepCopy()
	now := metav1.Now()
	m.Status.Recommendation = &v1alpha1.RecommendedPodResources{Recommender: w.r.cfg.name, Time: &now,
		Withheld: &v1alpha1.WithheldRecommendation{Reason: reason, Message: msg}}
	if err := w.r.c.Status().Patch(ctx, m, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		w.log.Warn("agents: withholding the recommendation", "reason", reason, "err", err)
	}
}
