package train

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
)

// taskEnv rewards a CPU limit close to its task's target; its own state is
// the same for both tasks, so only an embedding can tell them apart.
type taskEnv struct{ target float64 }

func (taskEnv) ObservationSpace() gym.Space {
	return gym.Space{Names: []string{"bias"}, Low: []float64{0}, High: []float64{1}}
}
func (taskEnv) ActionSpace() gym.Space { return gym.ActionSpace(gym.DefaultBounds()) }
func (taskEnv) Reset(context.Context, uint64) ([]float64, gym.Info, error) {
	return []float64{1}, gym.Info{}, nil
}
func (e taskEnv) Step(_ context.Context, a []float64) ([]float64, float64, bool, bool, gym.Info, error) {
	d := a[gym.ActCPU] - e.target
	return []float64{1}, -4 * d * d, false, false, gym.Info{}, nil
}

func TestAgentsUseEmbedding(t *testing.T) {
	for _, algo := range []string{DDPG, PPOContinuous} {
		t.Run(algo, func(t *testing.T) {
			low, err := gym.Embed(taskEnv{target: 0.3}, []float64{-1, 0.5})
			require.NoError(t, err)
			high, err := gym.Embed(taskEnv{target: 1.8}, []float64{1, -0.5})
			require.NoError(t, err)
			ag, discrete, err := NewAgent(algo, low.ObservationSpace().Dim(), 5)
			require.NoError(t, err)
			require.False(t, discrete)
			// Alternate the tasks, one short episode each.
			for round := range 150 {
				for k, env := range []gym.Env{low, high} {
					_, err := Run(context.Background(), env, ag, Config{Episodes: 1, Seed: uint64(2*round + k), Explore: true, MaxSteps: 20, Mapping: gym.Absolute})
					require.NoError(t, err)
				}
			}
			act := make([]float64, gym.ActDim)
			target := make([]float64, gym.ActDim)
			cpu := func(env *gym.Embedded) float64 {
				obs, _, err := env.Reset(context.Background(), 0)
				require.NoError(t, err)
				ag.Act(act, obs, false)
				gym.Denormalize(target, act, env.ActionSpace())
				return target[gym.ActCPU]
			}
			assert.InDelta(t, 0.3, cpu(low), 0.25, "low task")
			assert.InDelta(t, 1.8, cpu(high), 0.25, "high task")
		})
	}
}
