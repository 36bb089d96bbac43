package mpaenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	scaletarget "github.com/aware-autoscaler/aware/controller/target"
	"github.com/aware-autoscaler/aware/gym"
)

// +kubebuilder:rbac:groups=autoscaling.aware.dev,resources=multidimpodautoscalers,verbs=get;list
// +kubebuilder:rbac:groups=autoscaling.aware.dev,resources=multidimpodautoscalers/status,verbs=get;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets,verbs=get
// +kubebuilder:rbac:groups=apps,resources=deployments/scale;statefulsets/scale;replicasets/scale,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list

type config struct {
	step, timeout, poll, settle time.Duration
	pickup                      time.Duration
	episode                     int
	log                         *slog.Logger
	podIndex                    bool
}

// Option configures an Env.
type Option func(*config)

// WithStep sets the controller's step interval (its --step; default 15 s).
// Observations cover one step; they are aligned to multiples of it, as the
// controller's are, so environments sharing an Observer share its rounds.
func WithStep(d time.Duration) Option { return func(c *config) { c.step = d } }

// WithEpisode sets the steps per episode (default: the MPA's
// spec.agent.episodeLength, else 100).
func WithEpisode(n int) Option { return func(c *config) { c.episode = n } }

// WithActuationTimeout bounds the wait for a step's action to be actuated
// once the controller has taken it, for the agent stage at Reset, and for a
// measured window after the one due (default 3 steps).
func WithActuationTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithPickupTimeout bounds the wait for the controller to take a step's
// recommendation (status.appliedRecommendationTime reaching it; default 10
// steps). A controller behind its rounds steps each MPA less often than
// once per step; the environment waits for it rather than writing the
// recommendation again.
func WithPickupTimeout(d time.Duration) Option { return func(c *config) { c.pickup = d } }

// WithPollInterval sets how often the target is read while waiting
// (default a quarter step, at most 1 s).
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// WithSettle sets how long after a window's end it is observed, so that
// the last scrape of the window has landed (default 1 s, at most a tenth
// of the step).
func WithSettle(d time.Duration) Option { return func(c *config) { c.settle = d } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithPodIndex says the client reads pods from a cache indexed by
// scaletarget.IndexPods (see scaletarget.Pods).
func WithPodIndex() Option { return func(c *config) { c.podIndex = true } }

// Env is one MPA's target as a gym.Env. Its methods are not safe for
// concurrent use (gym/remote serialises the calls of one environment).
type Env struct {
	c   client.Client
	key types.NamespacedName
	obs autoscaler.Observer
	cfg config

	recommender string
	action      gym.Space
	started     bool
	t           int
	prevArrival float64
}

var _ gym.Env = (*Env)(nil)

// New returns the environment of the MPA key. c needs to get and list
// MPAs, patch their status, get the target's scale subresource and list
// pods; obs reads the target's measurements (as the controller's does).
// The MPA must name an external recommender in spec.recommenders and use an
// update mode that actuates (InPlaceOrRecreate or Recreate); its bounds
// make the action space.
func New(ctx context.Context, c client.Client, key types.NamespacedName, obs autoscaler.Observer, opts ...Option) (*Env, error) {
	cfg := config{step: 15 * time.Second, settle: -1, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	if c == nil || obs == nil {
		return nil, errors.New("mpaenv: a client and an observer are required")
	}
	if cfg.step <= 0 {
		return nil, fmt.Errorf("mpaenv: step %v must be positive", cfg.step)
	}
	if cfg.timeout == 0 {
		cfg.timeout = 3 * cfg.step
	}
	if cfg.pickup == 0 {
		cfg.pickup = 10 * cfg.step
	}
	if cfg.poll == 0 {
		cfg.poll = min(cfg.step/4, time.Second)
	}
	if cfg.settle < 0 {
		cfg.settle = min(cfg.step/10, time.Second)
	}
	switch {
	case cfg.timeout <= 0:
		return nil, fmt.Errorf("mpaenv: actuation timeout %v must be positive", cfg.timeout)
	case cfg.pickup <= 0:
		return nil, fmt.Errorf("mpaenv: pickup timeout %v must be positive", cfg.pickup)
	case cfg.poll <= 0:
		return nil, fmt.Errorf("mpaenv: poll interval %v must be positive", cfg.poll)
	case cfg.episode < 0:
		return nil, fmt.Errorf("mpaenv: episode length %d must be positive", cfg.episode)
	}
	e := &Env{c: c, key: key, obs: obs, cfg: cfg}
	m, pol, err := e.read(ctx)
	if err != nil {
		return nil, err
	}
	if err := usable(m, pol); err != nil {
		return nil, err
	}
	if e.cfg.episode == 0 {
		e.cfg.episode = v1alpha1.DefaultEpisodeLength
		if pol.Agent != nil {
			e.cfg.episode = pol.Agent.EpisodeLength
		}
	}
	e.recommender = pol.Recommender
	e.action = gym.ActionSpace(pol.GymBounds())
	return e, nil
}

// usable says why the controller would not act on what the environment
// writes to m.
func usable(m *v1alpha1.MultidimPodAutoscaler, pol autoscaler.Policy) error {
	if !pol.External() {
		return fmt.Errorf("mpaenv: MPA %s/%s: spec.recommenders selects the built-in %q recommender; the environment is an external recommender, so name one (e.g. [{name: aware}])",
			m.Namespace, m.Name, v1alpha1.DefaultRecommenderName)
	}
	if pol.Mode != v1alpha1.UpdateModeInPlaceOrRecreate && pol.Mode != v1alpha1.UpdateModeRecreate {
		return fmt.Errorf("mpaenv: MPA %s/%s: spec.updatePolicy.updateMode is %s; the controller actuates steps only in %s or %s",
			m.Namespace, m.Name, pol.Mode, v1alpha1.UpdateModeInPlaceOrRecreate, v1alpha1.UpdateModeRecreate)
	}
	return nil
}

// agentActs says why the controller would not apply the agent's
// recommendation in the MPA's agent stage (nil when it would).
func (e *Env) agentActs(m *v1alpha1.MultidimPodAutoscaler, pol autoscaler.Policy) error {
	if pol.Agent == nil || (m.Status.Agent != nil && autoscaler.AgentActs(m.Status.Agent.Stage)) {
		return nil
	}
	stage := "not yet set"
	if m.Status.Agent != nil {
		stage = string(m.Status.Agent.Stage)
	}
	return fmt.Errorf("mpaenv: MPA %s: agent stage is %s; the controller applies an external recommendation only in %s or %s (spec.agent.bootstrap=false starts in %s)",
		e.key, stage, v1alpha1.StageOnline, v1alpha1.StageServing, v1alpha1.StageOnline)
}

// ObservationSpace is gym.ObservationSpace.
func (e *Env) ObservationSpace() gym.Space { return gym.ObservationSpace() }

// ActionSpace is the box of the MPA's bounds when the environment was made.
func (e *Env) ActionSpace() gym.Space { return e.action }

// Key is the MPA's namespace and name.
func (e *Env) Key() types.NamespacedName { return e.key }

// Reset starts an episode: it waits until the controller lets the agent
// act (agent stage Online or Serving) and observes the step that just
// ended. A cluster cannot be rewound, so seed is ignored; the episode
// continues from the target's current allocation and load.
func (e *Env) Reset(ctx context.Context, _ uint64) ([]float64, gym.Info, error) {
	e.started = false
	deadline := time.Now().Add(e.cfg.timeout)
	var (
		m   *v1alpha1.MultidimPodAutoscaler
		pol autoscaler.Policy
		err error
	)
	for {
		if m, pol, err = e.read(ctx); err != nil {
			return nil, gym.Info{}, err
		}
		if err := usable(m, pol); err != nil {
			return nil, gym.Info{}, err
		}
		err := e.agentActs(m, pol)
		if err == nil {
			break
		}
		if !time.Now().Before(deadline) {
			return nil, gym.Info{}, fmt.Errorf("%w (waited %v)", err, e.cfg.timeout)
		}
		if err := sleep(ctx, e.cfg.poll); err != nil {
			return nil, gym.Info{}, err
		}
	}
	now := time.Now()
	end := now.Truncate(e.cfg.step)
	if now.Sub(end) < e.cfg.settle {
		// The window that just ended may miss its last scrape; take the
		// one before.
		end = end.Add(-e.cfg.step)
	}
	obs, _, info, err := e.observe(ctx, pol, end, true)
	if err != nil {
		return nil, gym.Info{}, err
	}
	e.t, e.started = 0, true
	return obs, info, nil
}

// Step applies action [replicas, CPU cores per pod, memory bytes per pod]
// (clipped to the action space, then bounded by the MPA's per-step action
// bounds exactly as the controller bounds it) and returns the observation
// and reward of the first whole step measured after the controller
// actuated it. Episodes are truncated after the episode length; a cluster
// never terminates one.
func (e *Env) Step(ctx context.Context, action []float64) ([]float64, float64, bool, bool, gym.Info, error) {
	if !e.started {
		return nil, 0, false, false, gym.Info{}, errors.New("mpaenv: Step before Reset")
	}
	if len(action) != gym.ActDim {
		return nil, 0, false, false, gym.Info{}, fmt.Errorf("mpaenv: action has %d values, want %d (%v)", len(action), gym.ActDim, e.action.Names)
	}
	for i, v := range action {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, 0, false, false, gym.Info{}, fmt.Errorf("mpaenv: action %s is %g", e.action.Names[i], v)
		}
	}
	m, pol, err := e.read(ctx)
	if err != nil {
		return nil, 0, false, false, gym.Info{}, err
	}
	if err := usable(m, pol); err != nil {
		return nil, 0, false, false, gym.Info{}, err
	}
	if err := e.agentActs(m, pol); err != nil {
		return nil, 0, false, false, gym.Info{}, err
	}
	tgt, err := e.target(ctx, m, pol)
	if err != nil {
		return nil, 0, false, false, gym.Info{}, err
	}
	a := e.action.Clip(make([]float64, gym.ActDim), action)
	replicas, _ := autoscaler.DesiredReplicas(pol, tgt.replicas, int32(math.Round(a[gym.ActReplicas])), true)
	res, _ := autoscaler.TargetResources(pol, tgt.cur, autoscaler.Resources{CPU: a[gym.ActCPU], Memory: a[gym.ActMemory]}, true)
	written, err := e.recommend(ctx, m, tgt.container, replicas, res)
	if err != nil {
		return nil, 0, false, false, gym.Info{}, err
	}
	at, err := e.waitActuated(ctx, pol, written, replicas, res)
	if err != nil {
		return nil, 0, false, false, gym.Info{}, err
	}
	// The first whole step that starts after the actuation.
	end := at.Truncate(e.cfg.step).Add(2 * e.cfg.step)
	obs, reward, info, err := e.observe(ctx, pol, end, false)
	if err != nil {
		return nil, 0, false, false, gym.Info{}, err
	}
	e.t++
	info.Step = e.t
	return obs, reward, false, e.t >= e.cfg.episode, info, nil
}

// target is what a step needs of the MPA's target.
type target struct {
	replicas  int32
	pods      []corev1.Pod
	container string
	cur       autoscaler.Resources
}

func (e *Env) read(ctx context.Context) (*v1alpha1.MultidimPodAutoscaler, autoscaler.Policy, error) {
	var m v1alpha1.MultidimPodAutoscaler
	if err := e.c.Get(ctx, e.key, &m); err != nil {
		return nil, autoscaler.Policy{}, fmt.Errorf("mpaenv: MPA %s: %w", e.key, err)
	}
	pol, err := autoscaler.PolicyOf(&m)
	if err != nil {
		return nil, autoscaler.Policy{}, fmt.Errorf("mpaenv: MPA %s: %w", e.key, err)
	}
	return &m, pol, nil
}

func (e *Env) target(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol autoscaler.Policy) (target, error) {
	_, scale, err := scaletarget.GetScale(ctx, e.c, m)
	if err != nil {
		return target{}, fmt.Errorf("mpaenv: MPA %s: %w", e.key, err)
	}
	// The environment reads the pods only (it polls them every second
	// while it waits for an actuation): the cache's own objects, not
	// copies (with 1000 agents acting, deep copies of pods were a fifth
	// of the agent runner's CPU and most of its garbage).
	pods, err := scaletarget.Pods(ctx, e.c, m.Namespace, scale.Status.Selector, e.cfg.podIndex, client.UnsafeDisableDeepCopy)
	if err != nil {
		return target{}, fmt.Errorf("mpaenv: MPA %s: %w", e.key, err)
	}
	t := target{replicas: scale.Spec.Replicas, pods: pods, container: scaletarget.ScaledContainer(pol.Container, pods)}
	if t.container == "" {
		return target{}, fmt.Errorf("mpaenv: MPA %s: the target has no pods and spec.resourcePolicy names no container; nothing to size", e.key)
	}
	t.cur = scaletarget.MeanResources(pods, t.container)
	return t, nil
}

// recommend writes the recommendation the controller will apply, and
// returns its time as written (whole seconds).
func (e *Env) recommend(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, container string, replicas int32, res autoscaler.Resources) (time.Time, error) {
	orig := m.DeepCopy()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	m.Status.Recommendation = &v1alpha1.RecommendedPodResources{
		Replicas: &replicas, Recommender: e.recommender, Time: &now,
		ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: container, Target: autoscaler.ResourceList(res)}},
	}
	if err := e.c.Status().Patch(ctx, m, client.MergeFrom(orig)); err != nil {
		return time.Time{}, fmt.Errorf("mpaenv: MPA %s: writing the recommendation: %w", e.key, err)
	}
	e.cfg.log.Debug("recommended", "mpa", e.key.String(), "replicas", replicas, "cpu", res.CPU, "memoryMiB", res.Memory/gym.MiB)
	return now.Time, nil
}

// waitActuated waits until the target runs replicas ready pods whose
// applied resources are res, and returns when it saw that: first until the
// controller has taken the recommendation written at written (at most the
// pickup timeout), then at most the actuation timeout.
func (e *Env) waitActuated(ctx context.Context, pol autoscaler.Policy, written time.Time, replicas int32, res autoscaler.Resources) (time.Time, error) {
	start := time.Now()
	var taken time.Time
	for {
		m, _, err := e.read(ctx)
		if err != nil {
			return time.Time{}, err
		}
		tgt, err := e.target(ctx, m, pol)
		if err != nil {
			return time.Time{}, err
		}
		pending := actuationPending(pol, tgt, replicas, res)
		if pending == "" {
			return time.Now(), nil
		}
		now := time.Now()
		if taken.IsZero() {
			if a := m.Status.AppliedRecommendationTime; a != nil && !a.Time.Before(written) {
				taken = now
			} else if now.Sub(start) >= e.cfg.pickup {
				return time.Time{}, fmt.Errorf("mpaenv: MPA %s: the controller did not take the recommendation %d × (%gcores, %gMi) written at %s within %v (status.appliedRecommendationTime is %s): %s%s",
					e.key, replicas, res.CPU, res.Memory/gym.MiB, written.UTC().Format(time.RFC3339), e.cfg.pickup, timeString(a), pending, falseConditions(m))
			}
		}
		if !taken.IsZero() && now.Sub(taken) >= e.cfg.timeout {
			return time.Time{}, fmt.Errorf("mpaenv: MPA %s: the controller took %d × (%gcores, %gMi) after %v but did not actuate it within %v: %s (its status.desiredReplicas %d, lastScaleTime %s)%s",
				e.key, replicas, res.CPU, res.Memory/gym.MiB, taken.Sub(start).Round(time.Millisecond), e.cfg.timeout, pending,
				m.Status.DesiredReplicas, timeString(m.Status.LastScaleTime), falseConditions(m))
		}
		if err := sleep(ctx, e.cfg.poll); err != nil {
			return time.Time{}, err
		}
	}
}

// actuationPending says what still differs from the wanted allocation (""
// when nothing does). A pod the scheduler reports Unschedulable counts as
// actuated: the controller did its part and the cluster has no room for
// it (no cluster autoscaler adds any); the step measures the pods that
// run, instead of timing out and asking again for what cannot be placed.
func actuationPending(pol autoscaler.Policy, t target, replicas int32, res autoscaler.Resources) string {
	if t.replicas != replicas {
		return fmt.Sprintf("the target's replicas are %d", t.replicas)
	}
	ready, unschedulable := 0, 0
	for i := range t.pods {
		p := &t.pods[i]
		if !podReady(p) {
			if _, ok := scaletarget.Unschedulable(p); ok {
				unschedulable++
			}
			continue
		}
		ready++
		cur, ok := scaletarget.AppliedResources(p, t.container)
		if !ok {
			return fmt.Sprintf("pod %s has no container %q", p.Name, t.container)
		}
		// The controller leaves a running pod alone when the change is
		// below the profile's minResizePercent: such a pod counts as done
		// (judged per pod, as its resources are now, not from a mean the
		// controller may have taken over another set of pods).
		if _, resize := autoscaler.Resize(pol, cur, res, true); resize {
			return fmt.Sprintf("pod %s runs with (%gcores, %gMi)", p.Name, cur.CPU, cur.Memory/gym.MiB)
		}
	}
	if ready+unschedulable != int(replicas) || len(t.pods) != int(replicas) {
		return fmt.Sprintf("%d of %d pods ready, %d unschedulable (%d pods)", ready, replicas, unschedulable, len(t.pods))
	}
	return ""
}

// timeString is t in RFC 3339, or "unset".
func timeString(t *metav1.Time) string {
	if t == nil {
		return "unset"
	}
	return t.UTC().Format(time.RFC3339)
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// falseConditions lists the MPA's conditions that are not True, for error
// messages.
func falseConditions(m *v1alpha1.MultidimPodAutoscaler) string {
	var b strings.Builder
	for _, c := range m.Status.Conditions {
		if c.Status != metav1.ConditionTrue && c.Type != v1alpha1.ConditionScalingLimited && c.Type != v1alpha1.ConditionResizedInPlace {
			fmt.Fprintf(&b, "; %s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	return b.String()
}

// observe waits until the window ending at end is complete, then observes
// it; measurements that are not there yet are retried until a step later.
// A window still without them (a missed scrape: Prometheus needs two
// samples in a window for a rate) gives way to the next one, until the
// actuation timeout has passed since end; the observation is then of the
// first window measured. first sets the previous arrival rate to this one
// (no load change).
func (e *Env) observe(ctx context.Context, pol autoscaler.Policy, end time.Time, first bool) ([]float64, float64, gym.Info, error) {
	giveUp := end.Add(e.cfg.timeout)
	for {
		met, err := e.measureWindow(ctx, pol, end)
		if err == nil {
			if first {
				e.prevArrival = met.ArrivalRate
			}
			ev := autoscaler.Evaluate(pol, met, e.prevArrival)
			e.prevArrival = met.ArrivalRate
			return ev.State, ev.Reward, gym.Info{Metrics: met, SP: ev.SP, SLOViolated: ev.SP < 1}, nil
		}
		next := end.Add(e.cfg.step)
		if ctx.Err() != nil || next.After(giveUp) {
			return nil, 0, gym.Info{}, fmt.Errorf("%w (no window measured in the %v after it)", err, e.cfg.timeout)
		}
		e.cfg.log.Info("window without measurements; observing the next", "mpa", e.key.String(), "end", end, "err", err)
		end = next
	}
}

// measureWindow waits until the window ending at end is complete, then
// measures it, retrying until a step after end.
func (e *Env) measureWindow(ctx context.Context, pol autoscaler.Policy, end time.Time) (gym.Metrics, error) {
	if err := sleep(ctx, time.Until(end.Add(e.cfg.settle))); err != nil {
		return gym.Metrics{}, err
	}
	deadline := end.Add(e.cfg.step)
	for {
		met, err := e.measure(ctx, pol, end)
		if err == nil || ctx.Err() != nil || !time.Now().Before(deadline) {
			return met, err
		}
		e.cfg.log.Debug("measurements not ready; retrying", "mpa", e.key.String(), "err", err)
		if err := sleep(ctx, e.cfg.poll); err != nil {
			return gym.Metrics{}, err
		}
	}
}

// measure reads the target's measurements of the window ending at end, as
// the controller reads them.
func (e *Env) measure(ctx context.Context, pol autoscaler.Policy, end time.Time) (gym.Metrics, error) {
	m, _, err := e.read(ctx)
	if err != nil {
		return gym.Metrics{}, err
	}
	tgt, err := e.target(ctx, m, pol)
	if err != nil {
		return gym.Metrics{}, err
	}
	met, err := e.obs.Observe(ctx, autoscaler.NewQuery(m.Namespace, tgt.pods, tgt.container, e.cfg.step, end))
	if err != nil {
		return gym.Metrics{}, fmt.Errorf("mpaenv: MPA %s: measurements of the step ending %s: %w", e.key, end.Format(time.RFC3339), err)
	}
	autoscaler.Complete(&met, tgt.replicas, tgt.cur)
	return met, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("mpaenv: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}
