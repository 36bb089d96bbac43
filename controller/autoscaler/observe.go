package autoscaler

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

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
