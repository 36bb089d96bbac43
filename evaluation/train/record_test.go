package train

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/gym"
)

func TestRecordKeepsTheFallbacksSteps(t *testing.T) {
	e := env(t, 20)
	f, ok := baselines.Find("hpa+vpa")
	require.True(t, ok)
	space := e.ActionSpace()
	rec, err := f.New(baselines.RecommenderBounds(gym.BoundsOf(space)), 30*time.Second, 0.5)
	require.NoError(t, err)
	eps, records, err := Record(context.Background(), e, rec, 30*time.Second, Config{Episodes: 2, Seed: 3, MaxSteps: 20})
	require.NoError(t, err)
	require.Len(t, eps, 2)
	require.Len(t, records, 40, "every step of both episodes")
	target := make([]float64, gym.ActDim)
	var sum float64
	for i, tr := range records {
		require.NoError(t, gym.ObservationSpace().Contains(tr.State), "step %d", i)
		for _, a := range tr.Action {
			assert.True(t, a >= -1 && a <= 1, "step %d: action %v in the box", i, tr.Action)
		}
		if i < 20 {
			sum += tr.Reward
		}
		if i+1 < len(records) && i%20 != 19 {
			assert.Equal(t, tr.Next, records[i+1].State, "step %d: the next state is the next step's state", i)
		}
		// The recorded action is the allocation the recommender set.
		gym.Relative.Target(target, tr.Action, gym.Current(tr.State, gym.BoundsOf(space)), gym.BoundsOf(space))
		assert.GreaterOrEqual(t, target[gym.ActReplicas], 1.0)
	}
	assert.InDelta(t, eps[0].Reward, sum, 1e-9, "the records' rewards are the episode's")
	assert.NotEqual(t, records[0].Action, records[len(records)-1].Action, "HPA+VPA moved the allocation")
}
