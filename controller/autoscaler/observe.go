package autoscaler

import (
	"context"
	"log/slog"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/target"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// observed is what a step read of the MPA's target: its scale, its pods,
// the scaled container and its mean resources over the pods, and the
// step's metrics.
type observed struct {
	scale     *autoscalingv1.Scale
	pods      []corev1.Pod
	container string
	cur       Resources
	met       gym.Metrics
}

// readTarget reads the target's scale subresource and pods; nil, with the
// API error to retry (if any), when they cannot be read.
func (r *Reconciler) readTarget(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol Policy) (*observed, error) {
	_, scale, err := target.GetScale(ctx, r.c, m)
	if err != nil {
		r.cfg.metrics.errors.WithLabelValues("scale").Inc()
		r.setCondition(m, v1alpha1.ConditionAbleToScale, false, "FailedGetScale", err.Error())
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	pods, err := target.Pods(ctx, r.c, m.Namespace, scale.Status.Selector, r.cfg.podIndex)
	if err != nil {
		r.setCondition(m, v1alpha1.ConditionAbleToScale, false, "FailedListPods", err.Error())
		return nil, err
	}
	r.setCondition(m, v1alpha1.ConditionAbleToScale, true, "SucceededGetScale", "the target's scale subresource and pods can be read")
	container := target.ScaledContainer(pol.Container, pods)
	o := &observed{scale: scale, pods: pods, container: container, cur: target.MeanResources(pods, container)}
	m.Status.CurrentReplicas = scale.Status.Replicas
	return o, nil
}

// observe is the observe phase: the target's metrics over the step that
// just ended, completed with what the target says (o.met); false when they
// are missing or stale, and the step holds the last decision.
func (r *Reconciler) observe(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, o *observed, now time.Time, log *slog.Logger) bool {
	began := time.Now()
	q := NewQuery(m.Namespace, o.pods, o.container, r.cfg.step, now)
	q.MPA = m.Name
	met, err := r.obs.Observe(ctx, q)
	r.cfg.metrics.phase.WithLabelValues("observe").Observe(time.Since(began).Seconds())
	if err != nil {
		r.cfg.metrics.errors.WithLabelValues("observe").Inc()
		r.setCondition(m, v1alpha1.ConditionMetricsAvailable, false, "MetricsUnavailable", "holding the last decision: "+err.Error())
		log.Debug("metrics unavailable; holding", "err", err)
		return false
	}
	r.setCondition(m, v1alpha1.ConditionMetricsAvailable, true, "MetricsFresh", "the target's metrics are fresh")
	Complete(&met, o.scale.Spec.Replicas, o.cur)
	o.met = met
	return true
}

// Query selects one target's pods for an observation.
type Query struct {
	Namespace string
	// MPA names the MPA (in Namespace) whose step observes, for logs and
	// tests; "" outside a step.
	MPA string
	// Pods are the names of the target's pods.
	Pods []string
	// Young are the pods among Pods created after the observed window
	// began. A young pod without data yet is left out of the observation
	// instead of holding the step, as the HPA leaves out pods that are
	// starting.
	Young []string
	// Container is the scaled container.
	Container string
	// Window is the step that just ended; At is its end.
	Window time.Duration
	At     time.Time
}

// NewQuery is the query for pods over the step ending at at (rounded down
// to a multiple of window, as the snapshot of a round is). Pods started
// after the observed window began are Young: the round's snapshot, taken
// when the round began, may not have them yet, however late in the round
// the query runs.
func NewQuery(namespace string, pods []corev1.Pod, container string, window time.Duration, at time.Time) Query {
	q := Query{Namespace: namespace, Pods: make([]string, len(pods)), Container: container, Window: window, At: at}
	began := at.Truncate(window).Add(-window)
	for i := range pods {
		q.Pods[i] = pods[i].Name
		if pods[i].CreationTimestamp.After(began) {
			q.Young = append(q.Young, pods[i].Name)
		}
	}
	return q
}

// Complete fills in what an observation of a target cannot know: the
// target's desired replicas, and the per-pod limits cur where the pods
// report none.
func Complete(met *gym.Metrics, replicas int32, cur Resources) {
	met.Replicas = int(replicas)
	if met.CPULimit == 0 {
		met.CPULimit = cur.CPU
	}
	if met.MemoryLimit == 0 {
		met.MemoryLimit = cur.Memory
	}
}

// Observer reads a target's measurements over the step that just ended.
// It returns an error when metrics are missing or stale; the controller
// then holds its decision.
type Observer interface {
	Observe(ctx context.Context, q Query) (gym.Metrics, error)
}

// Trajectories is what the controller needs of the trajectory store.
type Trajectories interface {
	Append(ctx context.Context, steps ...trajectory.Step) error
	RecentEpisodes(ctx context.Context, app string, n int) ([]trajectory.Episode, error)
	// Range restores where an episode stands after a restart.
	Range(ctx context.Context, app string, from, to time.Time) ([]trajectory.Trajectory, error)
}

// ObserverFunc adapts a function to Observer (the fake of tests).
type ObserverFunc func(ctx context.Context, q Query) (gym.Metrics, error)

// Observe implements Observer.
func (f ObserverFunc) Observe(ctx context.Context, q Query) (gym.Metrics, error) { return f(ctx, q) }
