package gym

import "context"

// Env is one environment: one application under one autoscaler, stepped
// one RL time step at a time. Observations are State vectors; actions are
// points of ActionSpace: [replicas, CPU cores per pod, memory bytes per
// pod]. An episode is truncated after its length (100 steps in AWARE).
type Env interface {
	ObservationSpace() Space
	ActionSpace() Space
	// Reset starts a new episode; seed makes it reproducible.
	Reset(ctx context.Context, seed uint64) (obs []float64, info Info, err error)
	// Step applies action for one time step.
	Step(ctx context.Context, action []float64) (obs []float64, reward float64, terminated, truncated bool, info Info, err error)
}

// VecEnv is many environments stepped together in one call, for speed.
// Buffers are flat and row-major: environment i owns
// obs[i*ObservationSpace().Dim():(i+1)*...]. An environment whose episode
// ended is reset automatically by the next Step.
type VecEnv interface {
	Len() int
	ObservationSpace() Space
	ActionSpace() Space
	// Reset resets every environment, environment i with a seed derived
	// from seed and i, and writes the first observations to obs.
	Reset(ctx context.Context, seed uint64, obs []float64) error
	// Step applies actions and writes observations, rewards and whether
	// each episode ended (terminated or truncated) to the destinations.
	Step(ctx context.Context, actions, obs, rewards []float64, done []bool) error
	// Info returns environment i's last step's details.
	Info(i int) Info
}

// Action indices in an action vector.
const (
	ActReplicas = iota
	ActCPU
	ActMemory
	ActDim
)

// ActionSpace is the action box for the given bounds.
func ActionSpace(b Bounds) Space {
	return Space{
		Names: []string{"replicas", "cpu_cores", "memory_bytes"},
		Low:   []float64{float64(b.MinReplicas), b.MinCPU, b.MinMemory},
		High:  []float64{float64(b.MaxReplicas), b.MaxCPU, b.MaxMemory},
	}
}

// BoundsOf is the inverse of ActionSpace: the bounds of an action box.
func BoundsOf(space Space) Bounds {
	return Bounds{
		MinReplicas: int(space.Low[ActReplicas]), MaxReplicas: int(space.High[ActReplicas]),
		MinCPU: space.Low[ActCPU], MaxCPU: space.High[ActCPU],
		MinMemory: space.Low[ActMemory], MaxMemory: space.High[ActMemory],
	}
}
