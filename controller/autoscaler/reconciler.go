package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
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
// lower bound is written once per interval instead of at every step.
func WithVPARecommenderInterval(d time.Duration) Option {
	return func(c *config) { c.vpaInterval = d }
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithMetrics sets where the controller's own metrics go.
func WithMetrics(m *Metrics) Option { return func(c *config) { c.metrics = m } }

// WithRecorder sets the event recorder (default: events are dropped).
func WithRecorder(r record.EventRecorder) Option { return func(c *config) { c.recorder = r } }

// WithPodIndex says the client reads pods from a cache indexed by
// IndexPods, so that a target's pods are looked up by label instead of
// found by scanning its namespace (see TargetPods).
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

// roundTracker measures rounds: from a round's start (a multiple of the
// step) until its last MPA step finished, and how many steps it had,
// reported when the next round's first step finishes.
type roundTracker struct {
	mu             sync.Mutex
	round, last    time.Time
	steps, written int
}

func (t *roundTracker) stepped(round, end time.Time, wrote bool, m *Metrics) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case round.After(t.round):
		if !t.round.IsZero() {
			d := t.last.Sub(t.round).Seconds()
			m.round.Observe(d)
			m.lastRound.WithLabelValues("start").Set(float64(t.round.UnixNano()) / 1e9)
			m.lastRound.WithLabelValues("seconds").Set(d)
			m.lastRound.WithLabelValues("steps").Set(float64(t.steps))
			m.lastRound.WithLabelValues("written").Set(float64(t.written))
		}
		t.round, t.last, t.steps, t.written = round, end, 0, 0
		fallthrough
	case round.Equal(t.round):
		t.last = maxTime(t.last, end)
		t.steps++
		if wrote {
			t.written++
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// mpaState is what the controller keeps in memory per MPA: the default
// recommender's histories and the last step, for the next trajectory
// record. Losing it (a restart) costs history, not correctness.
type mpaState struct {
	gen   int64
	rec   *mpa.MPA
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
		vpaInterval: vpa.DefaultRecommenderInterval}
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

// step is one MPA step; it edits m's status and returns the decision for
// the updater (nil: nothing to apply) and API errors.
func (r *Reconciler) step(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, st *mpaState, now time.Time, log *slog.Logger) (*plan, error) {
	gen := m.Generation
	m.Status.ObservedGeneration = gen
	pol, err := PolicyOf(m)
	if err != nil {
		r.setCondition(m, v1alpha1.ConditionAbleToScale, false, "InvalidSpec", err.Error())
		r.event(m, corev1.EventTypeWarning, "InvalidSpec", err.Error())
		return nil, nil
	}
	if st.rec == nil || st.gen != gen {
		// A new spec (bounds, targets, behaviour) builds a new recommender
		// that keeps what the old one learnt, as upstream VPA keeps its
		// histograms and HPA its recommendation history when their object
		// changes: the workload's usage did not change with the spec.
		var learnt *mpa.State
		if st.rec != nil {
			s := st.rec.State()
			learnt = &s
		}
		if st.rec, err = r.newRecommender(pol); err != nil {
			r.setCondition(m, v1alpha1.ConditionAbleToScale, false, "InvalidSpec", err.Error())
			return nil, nil
		}
		st.start = now
		switch {
		case learnt != nil:
			// Restored, its steps (and stepsBase) go on.
			if err := st.rec.Restore(*learnt); err != nil {
				log.Info("spec changed; the recommender starts afresh", "err", err)
				st.stepsBase = 0
			}
		default:
			st.stepsBase = 0 // restoreCheckpoint moves it to the checkpoint's
			if r.cfg.ckptEvery > 0 {
				r.restoreCheckpoint(ctx, m, st, log)
			}
		}
	}

	// The target and its pods.
	_, scale, err := GetScale(ctx, r.c, m)
	if err != nil {
		r.cfg.metrics.errors.WithLabelValues("scale").Inc()
		r.setCondition(m, v1alpha1.ConditionAbleToScale, false, "FailedGetScale", err.Error())
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	pods, err := TargetPods(ctx, r.c, m.Namespace, scale.Status.Selector, r.cfg.podIndex)
	if err != nil {
		r.setCondition(m, v1alpha1.ConditionAbleToScale, false, "FailedListPods", err.Error())
		return nil, err
	}
	r.setCondition(m, v1alpha1.ConditionAbleToScale, true, "SucceededGetScale", "the target's scale subresource and pods can be read")
	container := ScaledContainer(pol, pods)
	cur := MeanResources(pods, container)
	m.Status.CurrentReplicas = scale.Status.Replicas

	// Agent stage: INITIALIZED moves on at once (Algorithm 1).
	if pol.Agent != nil {
		if m.Status.Agent == nil {
			m.Status.Agent = &v1alpha1.AgentStatus{Stage: v1alpha1.StageInitialized}
		}
		if next := NextStage(m.Status.Agent.Stage, *pol.Agent, nil); next != m.Status.Agent.Stage {
			r.setStage(m, next, *pol.Agent, nil, now)
		}
	}

	// Observe.
	observed := time.Now()
	q := NewQuery(m.Namespace, pods, container, r.cfg.step, now)
	q.MPA = m.Name
	met, err := r.obs.Observe(ctx, q)
	r.cfg.metrics.phase.WithLabelValues("observe").Observe(time.Since(observed).Seconds())
	if err != nil {
		r.cfg.metrics.errors.WithLabelValues("observe").Inc()
		r.setCondition(m, v1alpha1.ConditionMetricsAvailable, false, "MetricsUnavailable", "holding the last decision: "+err.Error())
		log.Debug("metrics unavailable; holding", "err", err)
		return nil, nil
	}
	r.setCondition(m, v1alpha1.ConditionMetricsAvailable, true, "MetricsFresh", "the target's metrics are fresh")
	Complete(&met, scale.Spec.Replicas, cur)

	// The fallback recommendation is computed at every step so that it is
	// warm whenever it has to act.
	obs := recommender.Observation{
		Time: now.Sub(st.start) + r.cfg.step, Current: ToAllocation(scale.Spec.Replicas, cur),
		ReadyReplicas: met.ReadyReplicas, CPUUsage: met.CPUUsage, MemoryUsage: met.MemoryUsage,
		MemoryPeak: met.MemoryPeak, OOMKills: met.OOMKills, ArrivalRate: met.ArrivalRate,
		ProcessedRate: met.ProcessedRate, LatencyP99: met.LatencyP99,
	}
	fallback := st.rec.Recommend(obs)
	r.cfg.metrics.recommendations.Inc()
	// Due by the steps this controller took (not the recommender's
	// total): MPAs restored from checkpoints all stand at a multiple of
	// their phase, and would otherwise all write in the same rounds.
	if r.checkpointDue(m, st.rec.Steps()-st.stepsBase) {
		if err := r.writeCheckpoint(ctx, m, st, now); err != nil {
			r.cfg.metrics.errors.WithLabelValues("checkpoint").Inc()
			log.Warn("recommender checkpoint not written", "err", err)
		}
	}

	agentActs := pol.External() && (pol.Agent == nil || AgentActs(m.Status.Agent.Stage))
	// An external recommender that withholds its recommendation (a fresh
	// status.recommendation.withheld) hands this step to the fallback.
	withheld := agentActs && r.withheld(m.Status.Recommendation, st, now)
	var (
		recReplicas int32
		recRes      Resources
		haveRec     bool
	)
	// status.recommendation is the recommendation in force: the built-in
	// one whenever it acts (an external agent writes its own while it
	// acts, and its withheld marker stays for it to replace).
	if !agentActs {
		if rec := r.defaultRecommendation(st.rec, fallback, container, now); !sameRecommendation(m.Status.Recommendation, rec) {
			m.Status.Recommendation = rec
		}
	}
	if agentActs && !withheld {
		recReplicas, recRes, haveRec = r.externalRecommendation(m, st, container, cur, now)
		if haveRec {
			// The recommender waits for this to know its recommendation
			// was taken.
			if t := m.Status.Recommendation.Time; !t.Equal(m.Status.AppliedRecommendationTime) {
				m.Status.AppliedRecommendationTime = t.DeepCopy()
			}
		} else {
			r.setCondition(m, v1alpha1.ConditionRecommendationProvided, false, "NoFreshRecommendation",
				fmt.Sprintf("recommender %q has not written a recommendation in the last %d steps; holding", pol.Recommender, r.cfg.maxRecAge))
		}
	} else {
		recReplicas, recRes, haveRec = int32(fallback.Replicas), Resources{CPU: fallback.CPU, Memory: fallback.Memory}, true
	}
	switch {
	case withheld:
		w := m.Status.Recommendation.Withheld
		r.cfg.metrics.withheld.WithLabelValues(w.Reason).Inc()
		r.setCondition(m, v1alpha1.ConditionRecommendationProvided, false, w.Reason,
			fmt.Sprintf("recommender %q withheld its recommendation (%s); acting on hpa+vpa for this step", pol.Recommender, w.Message))
		agentActs = false // bounds and in-place rules of the fallback
	case haveRec:
		who := pol.Recommender
		if !agentActs {
			who = "hpa+vpa"
		}
		r.setCondition(m, v1alpha1.ConditionRecommendationProvided, true, "RecommendationApplied", "acting on the recommendation of "+who)
	}

	// The trajectory record of the previous step completes with this
	// step's reward; then this step's state and action are kept.
	ev := Evaluate(pol, met, st.prevArrival)
	state := ev.State
	st.prevArrival = met.ArrivalRate
	if pol.Agent != nil {
		recorded := time.Now()
		err := r.record(ctx, m, pol, st, ev.Reward, now)
		r.cfg.metrics.phase.WithLabelValues("record").Observe(time.Since(recorded).Seconds())
		if err != nil {
			r.cfg.metrics.errors.WithLabelValues("store").Inc()
			log.Warn("trajectory not recorded", "err", err)
		}
	}

	if !haveRec || pol.Mode == v1alpha1.UpdateModeOff {
		if pol.Mode == v1alpha1.UpdateModeOff {
			r.upd.cancel(m.UID)
		}
		st.prevState, st.prevAction = state, gym.Allocation{Replicas: int(scale.Spec.Replicas), CPU: cur.CPU, Memory: cur.Memory}.Vector(make([]float64, gym.ActDim))
		m.Status.DesiredReplicas = scale.Spec.Replicas
		return nil, nil
	}

	// Actuate.
	desired, cappedR := DesiredReplicas(pol, scale.Spec.Replicas, recReplicas, agentActs)
	res, cappedV := TargetResources(pol, cur, recRes, agentActs)
	if cappedR || cappedV {
		r.setCondition(m, v1alpha1.ConditionScalingLimited, true, "CappedByPolicy", fmt.Sprintf("recommendation %d×(%gcores, %gMi) capped to %d×(%gcores, %gMi)", recReplicas, recRes.CPU, recRes.Memory/mib, desired, res.CPU, res.Memory/mib))
	} else {
		r.setCondition(m, v1alpha1.ConditionScalingLimited, false, "WithinBounds", "the recommendation is within the constraints and resource policy")
	}
	// Running pods are left alone for small changes (as upstream VPA's
	// updater); the trajectory records the resources the pods keep.
	applied, vertical := Resize(pol, cur, res, agentActs)
	if !vertical && podsOffTarget(pol, pods, container, res, agentActs) {
		// The mean is on target but a pod is not (one created from the
		// template while the admission webhook was off or failed
		// open): it is resized alone.
		vertical = true
	}
	st.prevState, st.prevAction = state, gym.Allocation{Replicas: int(desired), CPU: applied.CPU, Memory: applied.Memory}.Vector(make([]float64, gym.ActDim))
	m.Status.DesiredReplicas = desired
	resize := vertical && (pol.Mode == v1alpha1.UpdateModeInPlaceOrRecreate || pol.Mode == v1alpha1.UpdateModeRecreate)
	if desired == scale.Spec.Replicas && !resize {
		// The target is where this step wants it: an earlier decision
		// still queued would move it away.
		r.upd.cancel(m.UID)
		return nil, nil
	}
	return &plan{mpa: m.DeepCopy(), st: st, pol: pol, container: container,
		desired: desired, res: res, resize: resize, agent: agentActs, decided: now}, nil
}

func (r *Reconciler) newRecommender(p Policy) (*mpa.MPA, error) {
	return mpa.New(p.Bounds, r.cfg.step, mpa.WithHPA(hpa.WithTarget(p.CPUTarget), hpa.WithBehavior(p.Behavior)),
		mpa.WithVPA(vpa.WithRecommenderInterval(r.cfg.vpaInterval)))
}

// defaultRecommendation is the status recommendation of the built-in
// recommender, with the VPA's bounds when it has them.
func (r *Reconciler) defaultRecommendation(rec *mpa.MPA, a recommender.Allocation, container string, now time.Time) *v1alpha1.RecommendedPodResources {
	t := metav1.NewTime(now)
	replicas := int32(a.Replicas)
	cr := v1alpha1.RecommendedContainerResources{ContainerName: container, Target: ResourceList(Round(Resources{CPU: a.CPU, Memory: a.Memory}))}
	if v, ok := rec.VPA().Recommendation(); ok {
		cr.LowerBound = ResourceList(Round(Resources{CPU: v.LowerBound.CPU, Memory: v.LowerBound.Memory}))
		cr.UpperBound = ResourceList(Round(Resources{CPU: v.UpperBound.CPU, Memory: v.UpperBound.Memory}))
		cr.UncappedTarget = ResourceList(Round(Resources{CPU: v.UncappedTarget.CPU, Memory: v.UncappedTarget.Memory}))
	}
	return &v1alpha1.RecommendedPodResources{Replicas: &replicas, Recommender: "hpa+vpa", Time: &t,
		ContainerRecommendations: []v1alpha1.RecommendedContainerResources{cr}}
}

// sameRecommendation says whether a and b recommend the same, whenever
// they were made (a recommendation's time moves only when it changes, as
// upstream VPA writes its recommendation only when it changed).
func sameRecommendation(a, b *v1alpha1.RecommendedPodResources) bool {
	if a == nil || b == nil {
		return a == b
	}
	a, b = a.DeepCopy(), b.DeepCopy()
	a.Time, b.Time = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// withheld says whether rec is a fresh withheld marker of an external
// recommender.
func (r *Reconciler) withheld(rec *v1alpha1.RecommendedPodResources, st *mpaState, now time.Time) bool {
	return rec != nil && rec.Withheld != nil && rec.Time != nil && r.fresh(rec.Time.Time, st, now)
}

// fresh says whether an external recommendation written at t may be acted
// on at now: it is younger than maxRecAge steps, or this controller has
// stepped the MPA fewer than maxRecAge times since it was written. A
// controller behind its rounds (at 1000 MPAs on a loaded machine it reached
// each MPA about every 40 s on a 15 s step) thus counts the age in the
// MPA's own steps, and acts on what the recommender wrote since its last
// visit instead of holding it as stale while the recommender waits. A
// recommendation older than this controller's first step of the MPA (a
// restarted controller) is judged by its age alone.
func (r *Reconciler) fresh(t time.Time, st *mpaState, now time.Time) bool {
	if now.Sub(t) <= time.Duration(r.cfg.maxRecAge)*r.cfg.step {
		return true
	}
	if st.first.IsZero() || t.Before(st.first) {
		return false
	}
	since := 0
	for _, s := range st.steps {
		if s.After(t) {
			since++
		}
	}
	return since < r.cfg.maxRecAge
}

// stepped records a step of the MPA at now, keeping the last n.
func (s *mpaState) stepped(now time.Time, n int) {
	if s.first.IsZero() {
		s.first = now
	}
	if len(s.steps) == n {
		s.steps = append(s.steps[:0], s.steps[1:]...)
	}
	s.steps = append(s.steps, now)
}

// externalRecommendation reads what an external recommender wrote; stale
// or absent recommendations are not used.
func (r *Reconciler) externalRecommendation(m *v1alpha1.MultidimPodAutoscaler, st *mpaState, container string, cur Resources, now time.Time) (int32, Resources, bool) {
	rec := m.Status.Recommendation
	if rec == nil || rec.Time == nil || !r.fresh(rec.Time.Time, st, now) {
		return 0, Resources{}, false
	}
	replicas := m.Status.CurrentReplicas
	if rec.Replicas != nil {
		replicas = *rec.Replicas
	}
	res, _ := Recommended(rec, container, cur)
	return replicas, res, true
}

// record appends the trajectory step that the reward just observed
// completes, and at the end of an episode advances the lifecycle.
func (r *Reconciler) record(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol Policy, st *mpaState, reward float64, now time.Time) error {
	ag := m.Status.Agent
	r.cfg.metrics.reward.WithLabelValues(m.Namespace, m.Name).Set(reward)
	if st.prevState == nil || r.store == nil {
		return nil
	}
	app := m.Namespace + "/" + m.Name
	if !st.resumed {
		r.resume(ctx, app, st, ag, pol.Agent.EpisodeLength, now)
	}
	done := st.t+1 >= pol.Agent.EpisodeLength
	s := trajectory.Step{App: app, Episode: st.episode, T: st.t, Time: now, State: st.prevState,
		Action: st.prevAction, Reward: reward, Done: done, Stage: string(ag.Stage)}
	err := r.store.Append(ctx, s)
	if errors.Is(err, trajectory.ErrInvalid) {
		// The store disagrees about where the episode stands: steps
		// buffered before a crash never became durable, or the store
		// could not be read at the restart. The episode is abandoned (it
		// stays incomplete in the store, outside every episode statistic)
		// and the next one starts with this step, instead of every later
		// step being refused.
		r.cfg.log.Warn("trajectory store out of step with the controller; starting a new episode",
			"mpa", app, "episode", st.episode, "step", st.t, "err", err)
		r.cfg.metrics.abandoned.Inc()
		st.episode, st.t = st.episode+1, 0
		done = pol.Agent.EpisodeLength <= 1
		s.Episode, s.T, s.Done = st.episode, 0, done
		err = r.store.Append(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("trajectory %s episode %d step %d: %w", app, st.episode, st.t, err)
	}
	r.cfg.metrics.recorded.Inc()
	st.t++
	if !done {
		return nil
	}
	st.episode, st.t = st.episode+1, 0
	ag.Episode = st.episode
	eps, err := r.store.RecentEpisodes(ctx, app, pol.Agent.Thresholds.Window)
	if err != nil {
		return fmt.Errorf("recent episodes of %s: %w", app, err)
	}
	rewards := make([]float64, len(eps))
	for i, e := range eps {
		rewards[i] = e.Reward
	}
	mean, std := MeanStd(rewards)
	ag.RecentReward, ag.RecentRewardStdDev = &mean, &std
	r.cfg.metrics.episodeReward.WithLabelValues(m.Namespace, m.Name).Set(mean)
	if next := NextStage(ag.Stage, *pol.Agent, rewards); next != ag.Stage {
		r.setStage(m, next, *pol.Agent, rewards, now)
	}
	return nil
}

// resume restores where the MPA's episode stands after a (re)start from
// the trajectory store: the episode in status.agent (written when an
// episode ends), continued at the step after the last one recorded if the
// store holds that episode unfinished, else the next episode. A store that
// cannot be read leaves status's episode at step 0; Append then refuses
// the step if the store has it, and record starts the next episode.
func (r *Reconciler) resume(ctx context.Context, app string, st *mpaState, ag *v1alpha1.AgentStatus, episodeLen int, now time.Time) {
	st.resumed = true
	st.episode, st.t = ag.Episode, 0
	window := time.Duration(episodeLen+2) * r.cfg.step
	trs, err := r.store.Range(ctx, app, now.Add(-window), now)
	if err != nil {
		r.cfg.log.Warn("where the episode stands could not be read from the trajectory store", "mpa", app, "err", err)
		return
	}
	if len(trs) == 0 {
		return
	}
	last := trs[len(trs)-1]
	if last.Episode.Episode < ag.Episode || len(last.Steps) == 0 {
		return
	}
	end := last.Steps[len(last.Steps)-1]
	if end.Done {
		st.episode = last.Episode.Episode + 1
		return
	}
	st.episode, st.t = last.Episode.Episode, end.T+1
	if last.Steps[0].T != 0 {
		// The episode began before the window: its earlier steps are
		// too far back to continue it; start the next one.
		st.episode, st.t = last.Episode.Episode+1, 0
	}
}

// setStage moves the agent to stage s and says so three ways: an Event, the
// AgentServing condition (its reason and message from Transition) and the
// stage-transition counter.
func (r *Reconciler) setStage(m *v1alpha1.MultidimPodAutoscaler, s v1alpha1.AgentStage, p v1alpha1.AgentProfile, rewards []float64, now time.Time) {
	from := m.Status.Agent.Stage
	reason, msg := Transition(from, s, p, rewards)
	r.setCondition(m, v1alpha1.ConditionAgentServing, s == v1alpha1.StageServing, reason, msg)
	r.cfg.metrics.transitions.WithLabelValues(string(orInitialized(from)), string(s)).Inc()
	t := metav1.NewTime(now)
	m.Status.Agent.Stage, m.Status.Agent.StageTime = s, &t
	for _, st := range []v1alpha1.AgentStage{v1alpha1.StageInitialized, v1alpha1.StageOffline, v1alpha1.StageOnline, v1alpha1.StageServing} {
		v := 0.0
		if st == s {
			v = 1
		}
		r.cfg.metrics.stage.WithLabelValues(m.Namespace, m.Name, string(st)).Set(v)
	}
	r.event(m, corev1.EventTypeNormal, "StageChanged", fmt.Sprintf("agent stage %s → %s (%s): %s", orInitialized(from), s, reason, msg))
}

func orInitialized(s v1alpha1.AgentStage) v1alpha1.AgentStage {
	if s == "" {
		return v1alpha1.StageInitialized
	}
	return s
}

// GetScale reads the scale subresource of an MPA's target. The target is
// a typed object when c's scheme knows its kind, else unstructured (any
// kind with a scale subresource, e.g. a custom resource). Deployments,
// StatefulSets and ReplicaSets are read with Get (from the cache of a
// manager's client: no request per step) and their scale derived as the
// API server derives it; other kinds are read through the subresource.
func GetScale(ctx context.Context, c client.Client, m *v1alpha1.MultidimPodAutoscaler) (client.Object, *autoscalingv1.Scale, error) {
	ref := m.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.scaleTargetRef.apiVersion %q: %w", ref.APIVersion, err)
	}
	gvk := gv.WithKind(ref.Kind)
	var target client.Object
	if o, err := c.Scheme().New(gvk); err == nil {
		if co, ok := o.(client.Object); ok {
			target = co
		}
	}
	if target == nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		target = u
	}
	target.SetNamespace(m.Namespace)
	target.SetName(ref.Name)
	if scale, ok, err := typedScale(ctx, c, target); ok || err != nil {
		if err != nil {
			return nil, nil, fmt.Errorf("scale of %s %s/%s: %w", ref.Kind, m.Namespace, ref.Name, err)
		}
		return target, scale, nil
	}
	scale := &autoscalingv1.Scale{}
	if err := c.SubResource("scale").Get(ctx, target, scale); err != nil {
		return nil, nil, fmt.Errorf("scale of %s %s/%s: %w", ref.Kind, m.Namespace, ref.Name, err)
	}
	return target, scale, nil
}

// typedScale derives the scale of the apps/v1 workloads from the object
// itself; ok is false for other kinds. The scale carries no resource
// version, so that an update of it is not refused for a cache that lags.
func typedScale(ctx context.Context, c client.Client, target client.Object) (*autoscalingv1.Scale, bool, error) {
	var (
		spec     *int32
		status   int32
		selector *metav1.LabelSelector
	)
	switch o := target.(type) {
	case *appsv1.Deployment:
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return nil, true, err
		}
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector
	case *appsv1.StatefulSet:
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return nil, true, err
		}
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector
	case *appsv1.ReplicaSet:
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return nil, true, err
		}
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector
	default:
		return nil, false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, true, fmt.Errorf("spec.selector: %w", err)
	}
	replicas := int32(1) // the API's default
	if spec != nil {
		replicas = *spec
	}
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: target.GetName(), Namespace: target.GetNamespace(), UID: target.GetUID()},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
		Status:     autoscalingv1.ScaleStatus{Replicas: status, Selector: sel.String()},
	}, true, nil
}

// PodLabelIndex is the name of a cache index of pods by each of their
// labels, as "key=value" (IndexPods).
const PodLabelIndex = "aware.label"

// IndexPods adds PodLabelIndex to a cache. A cache lists by namespace
// through its own index but filters by labels pod by pod, so without this
// every target's pod lookup scans its namespace: with one pod set per MPA
// in a namespace, a round's lookups grow with the square of the MPAs
// (18 % of the controller's CPU at 1000 MPAs, docs/controller.md).
func IndexPods(ctx context.Context, fi client.FieldIndexer) error {
	return fi.IndexField(ctx, &corev1.Pod{}, PodLabelIndex, podLabels)
}

// podLabels are a pod's labels as "key=value", PodLabelIndex's values.
func podLabels(o client.Object) []string {
	out := make([]string, 0, len(o.GetLabels()))
	for k, v := range o.GetLabels() {
		out = append(out, k+"="+v)
	}
	return out
}

// exactLabel is a "key=value" every pod that sel matches carries: its
// first requirement of one key equal to one value; false when it has none
// (a selector of set-based requirements only).
func exactLabel(sel labels.Selector) (string, bool) {
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if v := r.Values(); v.Len() == 1 {
				return r.Key() + "=" + v.UnsortedList()[0], true
			}
		}
	}
	return "", false
}

// TargetPods lists the pods of a target's selector (the scale
// subresource's status.selector) that are neither terminating nor finished.
// With indexed, c is a cache with PodLabelIndex (IndexPods) and the pods
// are looked up by one of the selector's exact labels, then filtered by
// the whole selector; without it, or when the selector has no exact label,
// c filters the namespace's pods. extra options go to the List: a caller
// that only reads the pods may pass client.UnsafeDisableDeepCopy, so that a
// cache returns its own objects instead of deep copies.
func TargetPods(ctx context.Context, c client.Reader, ns, selector string, indexed bool, extra ...client.ListOption) ([]corev1.Pod, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("target selector %q: %w", selector, err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("target selector %q selects every pod; refusing", selector)
	}
	opts := append([]client.ListOption{client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}}, extra...)
	if label, ok := exactLabel(sel); ok && indexed {
		opts = append(opts, client.MatchingFields{PodLabelIndex: label})
	}
	var list corev1.PodList
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("pods of %s: %w", ns, err)
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && len(p.Spec.Containers) > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

// ScaledContainer is the container the policy scales: the named one, else
// the first container of the pods ("" without pods).
func ScaledContainer(p Policy, pods []corev1.Pod) string {
	if p.Container == "" && len(pods) > 0 {
		return pods[0].Spec.Containers[0].Name
	}
	return p.Container
}

// MeanResources is the mean over pods of a container's limits as applied
// (the kubelet's report in the pod status), else as specified.
func MeanResources(pods []corev1.Pod, container string) Resources {
	var sum Resources
	n := 0
	for i := range pods {
		r, ok := podResources(&pods[i], container, true)
		if !ok {
			continue
		}
		sum.CPU += r.CPU
		sum.Memory += r.Memory
		n++
	}
	if n == 0 {
		return Resources{}
	}
	return Resources{CPU: sum.CPU / float64(n), Memory: sum.Memory / float64(n)}
}

// AppliedResources are a pod container's limits as applied (the kubelet's
// report in the pod status), else as specified; false when the pod has no
// such container.
func AppliedResources(p *corev1.Pod, container string) (Resources, bool) {
	return podResources(p, container, true)
}

// Unschedulable reports whether the scheduler found no node for the
// Pending pod p, and its message saying why.
func Unschedulable(p *corev1.Pod) (string, bool) {
	if p.Status.Phase != corev1.PodPending {
		return "", false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message, c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return "", false
}

func podResources(p *corev1.Pod, container string, applied bool) (Resources, bool) {
	if applied {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == container && cs.Resources != nil {
				return ContainerResources(*cs.Resources), true
			}
		}
	}
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return ContainerResources(c.Resources), true
		}
	}
	return Resources{}, false
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
