package autoscaler

import (
	"context"
	"time"

	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// Query selects one target's pods for an observation.
type Query struct {
	Namespace string
	// Pods are the names of the target's pods.
	Pods []string
	// Container is the scaled container.
	Container string
	// Window is the step that just ended; At is its end.
	Window time.Duration
	At     time.Time
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
}

// ObserverFunc adapts a function to Observer (the fake of tests).
type ObserverFunc func(ctx context.Context, q Query) (gym.Metrics, error)

// Observe implements Observer.
func (f ObserverFunc) Observe(ctx context.Context, q Query) (gym.Metrics, error) { return f(ctx, q) }
