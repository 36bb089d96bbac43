package remote

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/aware-autoscaler/aware/gym"
)

// constEnv observes [1, 2] and rewards the first action value.
type constEnv struct{}

func (constEnv) ObservationSpace() gym.Space {
	return gym.Space{Names: []string{"a", "b"}, Low: []float64{0, 0}, High: []float64{1, 1}}
}
func (constEnv) ActionSpace() gym.Space { return gym.ActionSpace(gym.DefaultBounds()) }
func (constEnv) Reset(context.Context, uint64) ([]float64, gym.Info, error) {
	return []float64{1, 2}, gym.Info{}, nil
}
func (constEnv) Step(_ context.Context, a []float64) ([]float64, float64, bool, bool, gym.Info, error) {
	return []float64{1, 2}, a[0], false, false, gym.Info{Step: 1}, nil
}

// fakeEnv is a scriptable gym.Env: its observation is [seed, step], its
// reward the first action value; it truncates every third step. Its plain
// fields are written by Reset and Step without a lock, so the race
// detector sees calls the server fails to serialise.
type fakeEnv struct {
	seed  uint64
	steps int

	resetErr, stepErr error
	shortObs          bool // return one observation value too few

	// enter, if set, receives a value when Step starts; wait, if set,
	// is called next (it blocks as the test likes).
	enter chan<- struct{}
	wait  func(ctx context.Context) error

	inFlight, maxInFlight atomic.Int32
	calls                 atomic.Int32
}

func (f *fakeEnv) ObservationSpace() gym.Space {
	return gym.Space{Names: []string{"seed", "step"}, Low: []float64{0, 0}, High: []float64{1e19, 1e9}}
}

func (f *fakeEnv) ActionSpace() gym.Space { return gym.ActionSpace(gym.DefaultBounds()) }

func (f *fakeEnv) Reset(_ context.Context, seed uint64) ([]float64, gym.Info, error) {
	f.calls.Add(1)
	if f.resetErr != nil {
		return nil, gym.Info{}, f.resetErr
	}
	f.seed, f.steps = seed, 0
	return []float64{float64(seed), 0}, gym.Info{SP: 1}, nil
}

func (f *fakeEnv) Step(ctx context.Context, a []float64) ([]float64, float64, bool, bool, gym.Info, error) {
	f.calls.Add(1)
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxInFlight.Load()
		if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if f.enter != nil {
		f.enter <- struct{}{}
	}
	if f.wait != nil {
		if err := f.wait(ctx); err != nil {
			return nil, 0, false, false, gym.Info{}, err
		}
	}
	if f.stepErr != nil {
		return nil, 0, false, false, gym.Info{}, f.stepErr
	}
	f.steps++
	obs := []float64{float64(f.seed), float64(f.steps)}
	if f.shortObs {
		obs = obs[:1]
	}
	info := gym.Info{Step: f.steps, SP: 0.5, SLOViolated: true, Metrics: gym.Metrics{Replicas: int(a[0]), CPULimit: a[1], MemoryLimit: a[2]}}
	return obs, a[0], false, f.steps%3 == 0, info, nil
}

// waitCtx blocks until ctx ends and reports its error on seen.
func waitCtx(seen chan<- error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		<-ctx.Done()
		seen <- ctx.Err()
		return ctx.Err()
	}
}

var errBoom = errors.New("boom")
