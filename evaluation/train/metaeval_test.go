package train

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
)

func TestSpearman(t *testing.T) {
	rho, err := Spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 1000})
	require.NoError(t, err)
	assert.InDelta(t, 1, rho, 1e-12, "monotone")
	rho, err = Spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1})
	require.NoError(t, err)
	assert.InDelta(t, -1, rho, 1e-12)
	assert.Equal(t, []float64{1.5, 1.5, 3, 4}, ranks([]float64{5, 5, 7, 9}), "ties share their mean rank")
	_, err = Spearman([]float64{1, 1, 1}, []float64{1, 2, 3})
	assert.ErrorContains(t, err, "constant")
	_, err = Spearman([]float64{1, 2}, []float64{1, 2})
	assert.ErrorContains(t, err, "at least 3")

	// A noisy positive relation: the interval holds the estimate and lies
	// above zero.
	var x, y []float64
	for i := range 200 {
		x = append(x, float64(i))
		y = append(y, float64(i)+60*math.Sin(float64(i)*1.7))
	}
	rho, lo, hi, err := SpearmanCI(x, y, 0.95, 500, 1)
	require.NoError(t, err)
	assert.Greater(t, rho, 0.5)
	assert.Less(t, lo, rho)
	assert.Greater(t, hi, rho)
	assert.Greater(t, lo, 0.0)
	_, _, _, err = SpearmanCI(x, y, 1.5, 500, 1)
	assert.Error(t, err)
}

func TestIdentify(t *testing.T) {
	refs := [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	queries := [][]float64{{0.9, 0.1, 0}, {0, 0, 1}, {0.1, 0, 0.8}} // the second is closest to the third reference
	acc, hits, err := Identify(refs, queries)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, true}, hits)
	assert.InDelta(t, 2.0/3, acc, 1e-12)
	_, _, err = Identify(refs, queries[:2])
	assert.Error(t, err)
}

func TestTrajectoriesRecordTheGreedyPolicy(t *testing.T) {
	tasks, ag, f := metaSetup(t, 1)
	f.SetMetaUpdates(false)
	emb := []float64{0.1, 0.2, 0.3, 0.4}
	trajs, eps, err := Trajectories(context.Background(), tasks[0].Env, ag, gym.Relative, emb, 2, 7, 20)
	require.NoError(t, err)
	require.Len(t, trajs, 2)
	features := tasks[0].Env.ObservationSpace().Dim() - len(emb) + 3 + 1
	for i, tr := range trajs {
		assert.Equal(t, 20, tr.Steps)
		assert.Len(t, tr.Elements, 20*features, "states without the embedding, action, reward")
		assert.InDelta(t, eps[i].Reward, tr.Reward, 1e-9)
		assert.Equal(t, i, tr.Episode)
	}
	again, _, err := Trajectories(context.Background(), tasks[0].Env, ag, gym.Relative, emb, 2, 7, 20)
	require.NoError(t, err)
	assert.Equal(t, trajs, again, "greedy and seeded: the same trajectories")
	assert.Equal(t, emb, tasks[0].Env.Embedding())

	e := EmbedTrajectories(f.Embedder(), trajs, 20)
	assert.Len(t, e, 4)
}
