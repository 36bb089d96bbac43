package sim

import (
	"context"
	"fmt"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

// AppEnv is one simulated application as a gym.Env.
type AppEnv struct {
	c       *Cluster
	obs     []float64
	reward  []float64
	done    []bool
	started bool
}

var _ gym.Env = (*AppEnv)(nil)

// NewEnv builds the environment of one application.
func NewEnv(prof *calibration.Profile, app App, opts ...Option) (*AppEnv, error) {
	c, err := New(prof, []App{app}, opts...)
	if err != nil {
		return nil, err
	}
	return &AppEnv{c: c, obs: make([]float64, gym.StateDim), reward: make([]float64, 1), done: make([]bool, 1)}, nil
}

// Cluster is the one-application cluster underneath, for Inject and Metrics.
func (e *AppEnv) Cluster() *Cluster { return e.c }

// ObservationSpace is gym.ObservationSpace.
func (e *AppEnv) ObservationSpace() gym.Space { return e.c.ObservationSpace() }

// ActionSpace is the box of the bounds.
func (e *AppEnv) ActionSpace() gym.Space { return e.c.ActionSpace() }

// Current is the observation and info of the step the application is at
// (false before the first Reset): a run that goes on from where another
// left off, as the episodes of a deployed service do, starts from them.
func (e *AppEnv) Current() ([]float64, gym.Info, bool) {
	if !e.started {
		return nil, gym.Info{}, false
	}
	return append([]float64(nil), e.obs...), e.c.Info(0), true
}

// Reset starts the application over; see Cluster.Reset.
func (e *AppEnv) Reset(ctx context.Context, seed uint64) ([]float64, gym.Info, error) {
	if err := e.c.Reset(ctx, seed, e.obs); err != nil {
		return nil, gym.Info{}, err
	}
	e.started = true
	return append([]float64(nil), e.obs...), e.c.Info(0), nil
}

// Step applies action [replicas, CPU cores, memory bytes] for one step. It
// is truncated at the episode length; the simulated service never
// terminates by itself.
func (e *AppEnv) Step(ctx context.Context, action []float64) ([]float64, float64, bool, bool, gym.Info, error) {
	if !e.started {
		return nil, 0, false, false, gym.Info{}, fmt.Errorf("sim: Step before Reset")
	}
	if len(action) != gym.ActDim {
		return nil, 0, false, false, gym.Info{}, fmt.Errorf("sim: action has %d values, want %d (%v)", len(action), gym.ActDim, e.ActionSpace().Names)
	}
	if err := e.c.Step(ctx, action, e.obs, e.reward, e.done); err != nil {
		return nil, 0, false, false, gym.Info{}, err
	}
	return append([]float64(nil), e.obs...), e.reward[0], false, e.done[0], e.c.Info(0), nil
}
