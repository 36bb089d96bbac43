package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
)

// +kubebuilder:rbac:groups=autoscaling.aware.dev,resources=multidimpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.aware.dev,resources=multidimpodautoscalers/status,verbs=get;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=deployments/scale;statefulsets/scale;replicasets/scale,verbs=get;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

type config struct {
	step        time.Duration
	maxRecAge   int
	concurrency int
	actuators   int
	log         *slog.Logger
	now         func() time.Time
	metrics     *Metrics
	recorder    record.EventRecorder
	podIndex    bool
	vpaInterval time.Duration
	ckptEvery   int
	ckptReader  client.Reader
	shard       Shard
	// timeScale is simulated seconds per wall second (WithTimeScale).
	timeScale float64
}

// Option configures a Reconciler.
type Option func(*config)

// WithStep sets the step interval (default 15 s, the HPA's sync period).
func WithStep(d time.Duration) Option { return func(c *config) { c.step = d } }

// WithMaxRecommendationAge sets after how many steps an external
// recommendation is stale (default 3): it is acted on while it is younger
// than that many step intervals or while the controller has stepped its MPA
// fewer times than that since it was written (a controller behind its
// rounds steps each MPA less often than once per interval).
func WithMaxRecommendationAge(steps int) Option { return func(c *config) { c.maxRecAge = steps } }

// WithConcurrency sets how many MPAs are reconciled at once (default 8).
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithActuationConcurrency sets how many MPAs' decisions are applied at
// once (default 8). The updater runs beside the reconcilers: a slow
// actuation never holds up another MPA's recommendation.
func WithActuationConcurrency(n int) Option { return func(c *config) { c.actuators = n } }

// WithVPARecommenderInterval sets how often the built-in VPA recomputes its
// recommendation (default upstream's 1 min; 0: at every step). Between
// recomputations the status keeps the last recommendation, so a drifting
// lower bound is written once per interval instead of at every step. The
// interval is in the recommender's time, simulated time under
// WithTimeScale.
func WithVPARecommenderInterval(d time.Duration) Option {
	return func(c *config) { c.vpaInterval = d }
}

// WithTimeScale says how many simulated seconds pass per wall second
// (default 1, a real cluster): on a digital twin that runs its apps k
// times faster than the wall clock (the local testbed), the recommenders
// run in the twin's time. Their observations' Time is the simulated time
// since the MPA's recommender was built, and the step they are built with
// (RecommenderConfig.Step) is the simulated time of one controller step,
// so that everything they count in time (the HPA's stabilisation windows
// and scaling-policy periods, the VPA's recommender interval, histogram
// decay, sample weights and confidence) follows simulated time. The
// controller's own clock stays the wall clock: its rounds (WithStep), the
// metric window it observes, the age of external recommendations and the
// trajectory records' times. k must be finite and at least 1.
func WithTimeScale(k float64) Option { return func(c *config) { c.timeScale = k } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithMetrics sets where the controller's own metrics go.
func WithMetrics(m *Metrics) Option { return func(c *config) { c.metrics = m } }

// WithRecorder sets the event recorder (default: events are dropped).
func WithRecorder(r record.EventRecorder) Option { return func(c *config) { c.recorder = r } }

// WithPodIndex says the client reads pods from a cache indexed by
// target.IndexPods, so that a target's pods are looked up by label
// instead of found by scanning its namespace (see target.Pods).
func WithPodIndex() Option { return func(c *config) { c.podIndex = true } }

// Reconciler runs one step of every MPA per step interval.
type Reconciler struct {
	c     client.Client
	obs   Observer
	store Trajectories
	cfg   config
	upd   *updater

	mu    sync.Mutex
	state map[types.UID]*mpaState
	names map[types.UID]types.NamespacedName

	rounds roundTracker
}

// mpaState is what the controller keeps in memory per MPA: its in-process
// recommender's histories and the last step, for the next trajectory
// record. Losing it (a restart) costs history, not correctness.
type mpaState struct {
	gen int64
	// rec is the recommender the controller runs for the MPA: the one its
	// spec names (RegisterRecommender), or the default when it names an
	// external recommender (the fallback).
	rec   recommender.Recommender
	start time.Time
	last  time.Time
	// first is this controller's first step of the MPA; steps holds the
	// times of its last maxRecAge steps, oldest first (a recommendation's
	// age in the MPA's own steps).
	first time.Time
	steps []time.Time
	// prevState and prevAction are the last step's state and action; the
	// reward observed next completes their trajectory record.
	prevState, prevAction []float64
	prevArrival           float64
	// The episode in progress: its number and the next step's index. Not
	// in status (the index moves every step); restored from the
	// trajectory store when resumed is false (a new controller).
	episode int64
	t       int
	resumed bool
	// ckptVersion is the resourceVersion of the MPA's checkpoint as this
	// controller last read or wrote it ("": unknown); ckptSteps the
	// recommender's steps it holds.
	ckptVersion string
	ckptSteps   int64
	// stepsBase is the recommender's steps when this controller took the
	// MPA up (those of a restored checkpoint, or 0).
	stepsBase int64

	// mu guards done, what the updater applied since the last status
	// write (the next step reports it).
	mu   sync.Mutex
	done outcome
}

// New returns a Reconciler reading metrics from obs and writing
// trajectories to store (nil: no trajectories).
func New(c client.Client, obs Observer, store Trajectories, opts ...Option) (*Reconciler, error) {
	cfg := config{step: 15 * time.Second, maxRecAge: 3, concurrency: 8, actuators: 8, log: slog.New(slog.DiscardHandler), now: time.Now,
		vpaInterval: vpa.DefaultRecommenderInterval, timeScale: 1}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case c == nil || obs == nil:
		return nil, errors.New("autoscaler: a client and an observer are required")
	case cfg.step < time.Second:
		return nil, fmt.Errorf("autoscaler: step %v is below 1s", cfg.step)
	case cfg.maxRecAge < 1:
		return nil, fmt.Errorf("autoscaler: max recommendation age %d steps must be positive", cfg.maxRecAge)
	case cfg.concurrency < 1:
		return nil, fmt.Errorf("autoscaler: concurrency %d must be positive", cfg.concurrency)
	case cfg.actuators < 1:
		return nil, fmt.Errorf("autoscaler: actuation concurrency %d must be positive", cfg.actuators)
	case cfg.vpaInterval < 0:
		return nil, fmt.Errorf("autoscaler: VPA recommender interval %v must be non-negative", cfg.vpaInterval)
	case cfg.ckptEvery < 0:
		return nil, fmt.Errorf("autoscaler: checkpoint every %d steps: must be non-negative", cfg.ckptEvery)
	case !(cfg.timeScale >= 1) || math.IsInf(cfg.timeScale, 0):
		return nil, fmt.Errorf("autoscaler: time scale %g: want a finite number of simulated seconds per wall second, at least 1", cfg.timeScale)
	}
	if cfg.metrics == nil {
		cfg.metrics = NewMetrics(nil)
	}
	if cfg.recorder == nil {
		cfg.recorder = &record.FakeRecorder{}
	}
	r := &Reconciler{c: c, obs: obs, store: store, cfg: cfg, state: map[types.UID]*mpaState{}, names: map[types.UID]types.NamespacedName{}}
	r.upd = newUpdater(r, cfg.actuators)
	return r, nil
}

// SetupWithManager registers the reconciler and its updater: MPAs are
// reconciled when their spec changes and then once per step.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(r.upd); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("multidimpodautoscaler").
		For(&v1alpha1.MultidimPodAutoscaler{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.cfg.concurrency}).
		Complete(r)
}

// Reconcile runs one step of one MPA.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var m v1alpha1.MultidimPodAutoscaler
	if err := r.c.Get(ctx, req.NamespacedName, &m); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	now := r.cfg.now()
	if !r.owns(ctx, string(m.UID), m.Namespace, m.Name, now) {
		return ctrl.Result{RequeueAfter: r.untilNextRound(now)}, nil
	}
	st := r.stateFor(&m)
	if !st.last.IsZero() && st.gen == m.Generation && !st.last.Before(now.Truncate(r.cfg.step)) {
		// This round's step is done (a spec change steps at once).
		return ctrl.Result{RequeueAfter: r.untilNextRound(now)}, nil
	}
	log := r.cfg.log.With("mpa", req.String())
	orig := m.DeepCopy()
	start := time.Now()
	p, err := r.step(ctx, &m, st, now, log)
	st.last, st.gen = now, m.Generation
	st.stepped(now, r.cfg.maxRecAge)
	applied := r.report(&m, st)
	wrote, perr := r.patchStatus(ctx, orig, &m)
	if perr != nil {
		st.add(applied)
		err = errors.Join(err, perr)
	}
	if p != nil {
		// The updater applies the decision once its recommendation is
		// written: one MPA's actuation never delays another's
		// recommendation.
		r.upd.submit(p)
	}
	r.cfg.metrics.reconcile.Observe(time.Since(start).Seconds())
	r.rounds.stepped(now.Truncate(r.cfg.step), r.cfg.now(), wrote, r.cfg.metrics)
	if err != nil {
		// Transient API errors: retry with back-off; every step is also
		// retried at the next round.
		log.Warn("step failed", "err", err)
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.untilNextRound(now)}, nil
}

// untilNextRound aligns steps on multiples of the step interval, so that
// one round of metric queries serves every MPA.
func (r *Reconciler) untilNextRound(now time.Time) time.Duration {
	next := now.Truncate(r.cfg.step).Add(r.cfg.step)
	return max(next.Sub(now), time.Millisecond)
}

// forget drops the state and the per-MPA metric series of a deleted MPA
// (states are keyed by UID, so a re-created MPA of the same name starts
// afresh).
func (r *Reconciler) forget(n types.NamespacedName) {
	r.cfg.metrics.forget(n.Namespace, n.Name)
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, name := range r.names {
		if name == n {
			delete(r.state, uid)
			delete(r.names, uid)
		}
	}
}

func (r *Reconciler) stateFor(m *v1alpha1.MultidimPodAutoscaler) *mpaState {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.state[m.UID]
	if !ok {
		s = &mpaState{gen: m.Generation}
		r.state[m.UID] = s
		r.names[m.UID] = types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
	}
	return s
}

// step is one MPA step, its phases in order: admit the spec (the policy,
// and the recommender of a new spec), read the target, begin the agent's
// lifecycle, observe the step's metrics, recommend, record the trajectory
// (the lifecycle advancing at the end of an episode), and plan. It edits
// m's status and returns the plan, which the updater actuates once
// Reconcile has written the status (nil: nothing to apply), and API
// errors.
func (r *Reconciler) step(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, st *mpaState, now time.Time, log *slog.Logger) (*plan, error) {
	m.Status.ObservedGeneration = m.Generation
	pol, ok := r.admit(ctx, m, st, now, log)
	if !ok {
		return nil, nil
	}
	o, err := r.readTarget(ctx, m, pol)
	if o == nil {
		return nil, err
	}
	r.beginLifecycle(m, pol, now)
	if !r.observe(ctx, m, o, now, log) {
		return nil, nil
	}
	d := r.recommend(ctx, m, pol, st, o, now, log)
	state := r.record(ctx, m, pol, st, o.met, now, log)
	return r.decide(m, pol, st, o, d, state, now), nil
}

func (r *Reconciler) setCondition(m *v1alpha1.MultidimPodAutoscaler, typ string, ok bool, reason, msg string) {
	meta.SetStatusCondition(&m.Status.Conditions, newCondition(m.Generation, typ, ok, reason, msg))
}

// newCondition is condition typ, True when ok, of generation gen, its
// message cut to 1024 bytes.
func newCondition(gen int64, typ string, ok bool, reason, msg string) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	const maxMsg = 1024
	if len(msg) > maxMsg {
		msg = msg[:maxMsg]
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
}

func (r *Reconciler) event(m *v1alpha1.MultidimPodAutoscaler, typ, reason, msg string) {
	r.cfg.recorder.Event(m, typ, reason, msg)
}

// patchStatus writes the status fields this step changed (a merge patch,
// so an external recommender's writes to other fields survive) and says
// whether the status had changed (a write was made).
func (r *Reconciler) patchStatus(ctx context.Context, orig, m *v1alpha1.MultidimPodAutoscaler) (wrote bool, err error) {
	if equality.Semantic.DeepEqual(orig.Status, m.Status) {
		// Written only when it changed (upstream HPA's
		// updateStatusIfNeeded).
		r.cfg.metrics.statusWrites.WithLabelValues("unchanged").Inc()
		return false, nil
	}
	r.cfg.metrics.statusWrites.WithLabelValues("written").Inc()
	defer func(began time.Time) {
		r.cfg.metrics.phase.WithLabelValues("status").Observe(time.Since(began).Seconds())
	}(time.Now())
	if err := r.c.Status().Patch(ctx, m, client.MergeFrom(orig)); err != nil {
		r.cfg.metrics.errors.WithLabelValues("status").Inc()
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return true, fmt.Errorf("status of %s/%s: %w", m.Namespace, m.Name, err)
	}
	return true, nil
}
