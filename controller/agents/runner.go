package agents

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/bootstrap"
	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/mpaenv"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// +kubebuilder:rbac:groups=autoscaling.aware.dev,resources=multidimpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.aware.dev,resources=multidimpodautoscalers/status,verbs=get;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments/scale;statefulsets/scale;replicasets/scale,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// DefaultName is the recommender name the runner answers to.
const DefaultName = "aware"

// Factory returns a fresh agent for an MPA's stateDim-wide states and
// actionDim-wide normalised actions, with weights and noise drawn from
// seed; boot says the MPA bootstraps, so the agent first learns from the
// fallback's records alone.
type Factory func(stateDim, actionDim int, boot bool, seed uint64) (agent.Agent, error)

// DefaultReplay is the replay memory of the runner's agents, in
// transitions: 4 h 16 min of 15 s steps, the newest overwriting the oldest.
// A runner hosts an agent per MPA, and the agents' own default (a million
// transitions, for training runs on the simulator) would let each grow by
// about 1.1 MB a day; 1024 transitions of the AWARE state are 192 KiB.
const DefaultReplay = 1024

// DefaultFactory is NewFactory(DefaultReplay).
func DefaultFactory(stateDim, actionDim int, boot bool, seed uint64) (agent.Agent, error) {
	return NewFactory(DefaultReplay)(stateDim, actionDim, boot, seed)
}

// NewFactory makes BCQ (controller/bootstrap, its defaults) for an MPA that
// bootstraps, else DDPG with Gaussian exploration σ = 0.05 (the project's
// meta-training and adaptation default: FIRM's 0.2 explores into OOM kills
// in the linear action box, see cmd/aware's metaNoise), each with a replay
// memory of replay transitions.
func NewFactory(replay int) Factory {
	return func(stateDim, actionDim int, boot bool, seed uint64) (agent.Agent, error) {
		rnd := rand.New(rand.NewPCG(seed, 0xA6E75))
		if boot {
			return bootstrap.New(stateDim, actionDim, rnd, bootstrap.WithReplay(replay))
		}
		return ddpg.New(stateDim, actionDim, rnd, ddpg.WithGaussianNoise(0.05), ddpg.WithReplay(replay, ddpg.DefaultConfig().BatchSize))
	}
}

type config struct {
	name           string
	step           time.Duration
	trainers       int
	updates        int
	offlineUpdates int
	factory        Factory
	seed           uint64
	log            *slog.Logger
	recorder       record.EventRecorder
	reg            prometheus.Registerer
	envOpts        []mpaenv.Option
	meta           *meta.FLASH
	mapping        gym.Mapping
	remote         *remote
	offlineEvery   time.Duration
	timeScale      float64
	policies       string
}

// Option configures a Runner.
type Option func(*config)

// WithName sets the recommender name the runner serves (default "aware").
func WithName(n string) Option { return func(c *config) { c.name = n } }

// WithStep sets the controller's step interval (its --step; default 15 s).
func WithStep(d time.Duration) Option { return func(c *config) { c.step = d } }

// WithTrainers bounds how many agents train at once (default 1: training
// takes at most one core).
func WithTrainers(n int) Option { return func(c *config) { c.trainers = n } }

// WithUpdates sets the training updates per acting step in ONLINE
// (default 1) and per recorded transition in OFFLINE (default 2; those
// that a replay smaller than a minibatch cannot run are made up once it
// can, so that an OFFLINE stage trains as many updates as its records
// would at once).
func WithUpdates(online, offline int) Option {
	return func(c *config) { c.updates, c.offlineUpdates = online, offline }
}

// WithFactory sets how agents are made (default DefaultFactory).
func WithFactory(f Factory) Option { return func(c *config) { c.factory = f } }

// WithSeed sets the seed every agent's seed is derived from (with its
// MPA's UID).
func WithSeed(s uint64) Option { return func(c *config) { c.seed = s } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithRecorder sets the event recorder (default: events dropped).
func WithRecorder(r record.EventRecorder) Option { return func(c *config) { c.recorder = r } }

// WithRegisterer registers the runner's metrics (default: not registered).
func WithRegisterer(r prometheus.Registerer) Option { return func(c *config) { c.reg = r } }

// WithEnvOptions passes options to each agent's mpaenv environment
// (WithStep is passed already).
func WithEnvOptions(opts ...mpaenv.Option) Option {
	return func(c *config) { c.envOpts = append(c.envOpts, opts...) }
}

// WithMeta gives every agent the frozen meta learner's embedding of its
// application (paper §3.2): f, with meta updates off, embeds the MPA's best
// recent complete episodes of the trajectory store (the controller records
// every step, the fallback's and the agent's), the agents' states end with
// that embedding (the factory is asked for states gym.StateDim + f's
// embedding width wide) and it is refreshed before every acting episode
// and every round of offline training, so that after SERVING → ONLINE the
// agent retrains on the embedding of what the application does now. One f
// serves every agent.
func WithMeta(f *meta.FLASH) Option { return func(c *config) { c.meta = f } }

// WithActions sets how the agents' continuous actions become allocations
// (default gym.Relative). A checkpoint of an agent that acted through
// another mapping is moved aside and a fresh agent starts.
func WithActions(m gym.Mapping) Option { return func(c *config) { c.mapping = m } }

// DefaultOfflineCheckpoints is the default of WithOfflineCheckpoints.
const DefaultOfflineCheckpoints = 2 * time.Minute

// WithOfflineCheckpoints sets how often an OFFLINE agent is checkpointed
// (default DefaultOfflineCheckpoints): after its first round of updates
// since the runner started hosting it, then at most every d (0: after
// every round that updated it). An OFFLINE
// agent trains at every step that brings records, and a checkpoint per
// step per agent (1000 MPAs: 67 checkpoints and 200 fsyncs a second) takes
// the disk from the cluster's own writers (etcd, InfluxDB). Nothing is
// lost in between: the checkpoint's State names the last record trained
// on, and a restarted runner trains on the records since. Stage changes
// and acting episodes' ends are always checkpointed. d is simulated time
// (WithTimeScale).
func WithOfflineCheckpoints(d time.Duration) Option { return func(c *config) { c.offlineEvery = d } }

// WithObjects copies every agent's checkpoint to an S3-compatible bucket
// under prefix (one tar archive per MPA: prefix/namespace/name-uid.tar),
// and an agent whose local checkpoint is missing or older resumes from
// it, so that a runner that lost its disk resumes each agent's stage,
// episode and weights. Checkpoints are copied at every stage change and
// episode end, and an OFFLINE agent's (see WithOfflineCheckpoints) at
// most every interval (default 5 minutes when 0; simulated time,
// WithTimeScale).
func WithObjects(o Objects, prefix string, interval time.Duration) Option {
	return func(c *config) {
		if interval <= 0 {
			interval = 5 * time.Minute
		}
		c.remote = &remote{objs: o, prefix: prefix, every: interval}
	}
}

// WithTimeScale says how many simulated seconds pass per wall second
// (default 1, a real cluster; the controller's --time-scale): the
// intervals given in simulated time, WithOfflineCheckpoints' and
// WithObjects', are divided by k to run on the wall clock. k must be
// finite and at least 1.
func WithTimeScale(k float64) Option { return func(c *config) { c.timeScale = k } }

// WithPolicies sets the folder of initial policies: an MPA annotated
// AnnotationInitialPolicy: NAME whose agent has no checkpoint of its own
// (neither in the checkpoint directory nor, with WithObjects, in the
// bucket) starts from the policy in dir/NAME (WritePolicy's agent.ckpt and
// policy.json) instead of a fresh agent: loaded into an agent of the
// policy's kind made by the runner's factory, then checkpointed as the
// MPA's own, so that a restart resumes it. A policy that cannot be used
// (dir unset, the folder missing or unreadable, its state width or action
// mapping not the runner's) withholds the MPA's recommendation with
// ReasonInitialPolicyUnreadable at every step, HPA+VPA acting, and one
// Warning event per generation says why; no fresh agent starts in its
// place.
func WithPolicies(dir string) Option { return func(c *config) { c.policies = dir } }

// Runner hosts one agent per MPA that names it.
type Runner struct {
	c     client.Client
	obs   autoscaler.Observer
	store trajectory.Store
	dir   string
	cfg   config
	met   *metrics
	pool  chan struct{}

	mu      sync.Mutex
	workers map[types.UID]*worker
	refused map[types.UID]int64 // MPAs naming the runner with an invalid policy: the generation reported

	metaMu sync.Mutex // serialises the shared meta learner
}

// stateDim is the width of the agents' states: the AWARE state and the
// embedding.
func (r *Runner) stateDim() int {
	if r.cfg.meta == nil {
		return gym.StateDim
	}
	return gym.StateDim + r.cfg.meta.Embedder().Config().Embed
}

// New returns a Runner. c reads MPAs, their targets and pods (a manager's
// cached client) and patches MPA status; obs observes the targets as the
// controller does; store holds the controller's trajectory records (read
// only); dir holds the agents' checkpoints, one folder per MPA.
func New(c client.Client, obs autoscaler.Observer, store trajectory.Store, dir string, opts ...Option) (*Runner, error) {
	cfg := config{name: DefaultName, step: 15 * time.Second, trainers: 1, updates: 1, offlineUpdates: 2,
		factory: DefaultFactory, seed: 1, log: slog.New(slog.DiscardHandler), offlineEvery: DefaultOfflineCheckpoints, timeScale: 1}
	for _, o := range opts {
		o(&cfg)
	}
	var errs []error
	if c == nil || obs == nil || store == nil {
		errs = append(errs, errors.New("a client, an observer and a trajectory store are required"))
	}
	if dir == "" {
		errs = append(errs, errors.New("a checkpoint directory is required"))
	}
	if cfg.name == "" {
		errs = append(errs, errors.New("the recommender name is empty"))
	}
	if cfg.step < time.Second {
		errs = append(errs, fmt.Errorf("step %v is below 1s", cfg.step))
	}
	if cfg.trainers < 1 || cfg.updates < 0 || cfg.offlineUpdates < 0 {
		errs = append(errs, fmt.Errorf("trainers %d must be positive and updates %d, %d not negative", cfg.trainers, cfg.updates, cfg.offlineUpdates))
	}
	if cfg.offlineEvery < 0 {
		errs = append(errs, fmt.Errorf("OFFLINE checkpoint interval %v is negative", cfg.offlineEvery))
	}
	if k := cfg.timeScale; !(k >= 1) || math.IsInf(k, 0) {
		errs = append(errs, fmt.Errorf("time scale %g: want a finite number of simulated seconds per wall second, at least 1", k))
	}
	if cfg.factory == nil {
		errs = append(errs, errors.New("nil agent factory"))
	}
	if cfg.remote != nil && cfg.remote.objs == nil {
		errs = append(errs, errors.New("nil object store"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	if cfg.recorder == nil {
		cfg.recorder = &record.FakeRecorder{}
	}
	cfg.offlineEvery = wallTime(cfg.offlineEvery, cfg.timeScale)
	if cfg.remote != nil {
		rem := *cfg.remote
		rem.every = wallTime(rem.every, cfg.timeScale)
		cfg.remote = &rem
	}
	if cfg.meta != nil {
		cfg.meta.SetMetaUpdates(false) // frozen at inference
	}
	cfg.envOpts = append([]mpaenv.Option{mpaenv.WithStep(cfg.step), mpaenv.WithLogger(cfg.log)}, cfg.envOpts...)
	return &Runner{c: c, obs: obs, store: store, dir: dir, cfg: cfg, met: newMetrics(cfg.reg),
		pool: make(chan struct{}, cfg.trainers), workers: map[types.UID]*worker{}, refused: map[types.UID]int64{}}, nil
}

// wallTime is the wall time in which simulated time d passes at time
// scale k.
func wallTime(d time.Duration, k float64) time.Duration {
	if k == 1 {
		return d
	}
	return time.Duration(math.Round(float64(d) / k))
}

// Start runs the runner until ctx ends (a controller-runtime Runnable): once
// per step it starts an agent for every MPA that names the runner's
// recommender and stops the agents of MPAs that are gone or name another.
func (r *Runner) Start(ctx context.Context) error {
	defer r.stopAll()
	for {
		if err := r.sync(ctx); err != nil && ctx.Err() == nil {
			r.cfg.log.Warn("agents: listing MPAs", "err", err)
		}
		if err := sleep(ctx, r.cfg.step); err != nil {
			return nil
		}
	}
}

// NeedLeaderElection: one runner per set of MPAs (sharding is future work).
func (r *Runner) NeedLeaderElection() bool { return false }

func (r *Runner) sync(ctx context.Context) error {
	var list v1alpha1.MultidimPodAutoscalerList
	if err := r.c.List(ctx, &list); err != nil {
		return err
	}
	seen := map[types.UID]bool{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range list.Items {
		m := &list.Items[i]
		pol, err := autoscaler.PolicyOf(m)
		if err != nil {
			r.refuse(m, err)
			seen[m.UID] = false // listed, not served
			continue
		}
		if !pol.External() || pol.Recommender != r.cfg.name {
			continue
		}
		seen[m.UID] = true
		if _, ok := r.workers[m.UID]; ok {
			continue
		}
		w := r.newWorker(m)
		wctx, cancel := context.WithCancel(ctx)
		w.cancel = cancel
		r.workers[m.UID] = w
		r.met.agents.Inc()
		go func() {
			defer close(w.done)
			w.run(wctx)
		}()
	}
	for uid, w := range r.workers {
		if !seen[uid] {
			w.cancel()
			<-w.done
			delete(r.workers, uid)
			r.met.agents.Dec()
		}
	}
	for uid := range r.refused {
		if _, listed := seen[uid]; !listed {
			delete(r.refused, uid)
		}
	}
	return nil
}

// refuse reports, once per generation, an MPA that names the runner but
// whose policy is invalid (the controller refuses it too): it gets no agent
// until it is fixed.
func (r *Runner) refuse(m *v1alpha1.MultidimPodAutoscaler, err error) {
	if !slices.ContainsFunc(m.Spec.Recommenders, func(s v1alpha1.RecommenderSelector) bool { return s.Name == r.cfg.name }) {
		return
	}
	if g, ok := r.refused[m.UID]; ok && g == m.Generation {
		return
	}
	r.refused[m.UID] = m.Generation
	r.cfg.log.Warn("agents: the MPA names this runner but its policy is invalid; no agent until it is fixed", "mpa", m.Namespace+"/"+m.Name, "err", err)
	r.cfg.recorder.Event(m, corev1.EventTypeWarning, ReasonInvalidPolicy, fmt.Sprintf("no agent for this MPA until its policy is fixed: %v", err))
}

func (r *Runner) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, w := range r.workers {
		w.cancel()
		<-w.done
		delete(r.workers, uid)
		r.met.agents.Dec()
	}
}

func (r *Runner) newWorker(m *v1alpha1.MultidimPodAutoscaler) *worker {
	key := types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
	h := fnv.New64a()
	_, _ = h.Write([]byte(m.UID))
	rel := filepath.Join(m.Namespace, m.Name+"-"+string(m.UID))
	return &worker{
		r: r, key: key, uid: m.UID, app: m.Namespace + "/" + m.Name,
		dir: filepath.Join(r.dir, rel), rel: rel,
		seed: r.cfg.seed ^ h.Sum64(),
		log:  r.cfg.log.With("mpa", key.String()),
		done: make(chan struct{}),
	}
}

// sleep waits d or until ctx ends (then its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type metrics struct {
	agents      prometheus.Gauge
	frozen      prometheus.Gauge
	steps       *prometheus.CounterVec
	updates     *prometheus.CounterVec
	episodes    prometheus.Counter
	checkpoints prometheus.Counter
	resumes     prometheus.Counter
	withheld    *prometheus.CounterVec
	errors      prometheus.Counter
	train       prometheus.Histogram
	uploads     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		agents: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aware_agents_hosted", Help: "Agents hosted (MPAs naming the runner's recommender)."}),
		frozen: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aware_agents_frozen",
			Help: "Agents in SERVING held as their policy alone (no critics, optimiser state or replay memory)."}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_agents_steps_total",
			Help: "Acting steps, by stage (ONLINE explores and trains, SERVING acts with the frozen policy)."}, []string{"stage"}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_agents_updates_total",
			Help: "Training updates, by stage (OFFLINE: from the fallback's records)."}, []string{"stage"}),
		episodes:    prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_agents_episodes_total", Help: "Acting episodes completed."}),
		checkpoints: prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_agents_checkpoints_total", Help: "Agent checkpoints written."}),
		resumes:     prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_agents_resumed_total", Help: "Agents resumed from a checkpoint."}),
		withheld: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_agents_withheld_total",
			Help: "Steps whose recommendation was withheld (HPA+VPA acts), by reason."}, []string{"reason"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_agents_errors_total", Help: "Failed agent cycles (retried a step later)."}),
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_agents_checkpoint_uploads_total",
			Help: "Checkpoint copies to the object store, by result (ok, error)."}, []string{"result"}),
		train: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "aware_agents_training_seconds",
			Help: "Time holding a training slot, per batch of updates.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	if reg != nil {
		reg.MustRegister(m.agents, m.frozen, m.steps, m.updates, m.episodes, m.checkpoints, m.resumes, m.withheld, m.errors, m.train, m.uploads)
	}
	return m
}
