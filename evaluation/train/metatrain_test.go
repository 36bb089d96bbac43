package train

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/gym"
)

// metaSetup is a fresh agent and meta learner for the two tasks of
// TestMetaRunLearnsTasksThroughTheEmbedding, with weights from seed.
func metaSetup(t *testing.T, seed uint64) ([]MetaTask, *ddpg.Agent, *meta.FLASH) {
	t.Helper()
	const E = 4
	tasks := lowHigh(t, E)
	rnd := rand.New(rand.NewPCG(seed, 2))
	stateDim := tasks[0].Env.ObservationSpace().Dim()
	ag, err := ddpg.New(stateDim, gym.ActDim, rnd, ddpg.WithEmbedding(E, ddpg.CriticLoss))
	require.NoError(t, err)
	own := stateDim - E
	emb, err := meta.NewEmbedder(meta.Config{Features: own + gym.ActDim + 1, Hidden: 6, Layers: 1, FC: 8, Embed: E}, rnd)
	require.NoError(t, err)
	opts := meta.DefaultOptions(20)
	opts.M = 4
	f, err := meta.NewFLASH(emb, opts)
	require.NoError(t, err)
	for _, tk := range tasks {
		require.NoError(t, f.Register(meta.Task{Name: tk.Name, StateDim: own, ActionDim: gym.ActDim}))
	}
	f.SetMetaUpdates(true)
	return tasks, ag, f
}

func TestMetaTrainResumes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := MetaTrainConfig{Rounds: 3, Seed: 5, MaxSteps: 20, Dir: dir}
	var rounds []int
	cfg.RoundDone = func(r int, eps []Episode) {
		rounds = append(rounds, r)
		assert.Len(t, eps, 2, "one episode per task")
	}

	tasks, ag, f := metaSetup(t, 1)
	start, eps, err := MetaTrain(ctx, tasks, ag, f, cfg)
	require.NoError(t, err)
	assert.Zero(t, start)
	assert.Len(t, eps["low"], 3)
	assert.Equal(t, []int{0, 1, 2}, rounds)
	want, err := f.Embedding(nil, "high")
	require.NoError(t, err)

	// A fresh process (other initial weights) resumes after round 3: its
	// meta learner is the saved one, and it runs rounds 3 to 5 only.
	tasks, ag2, f2 := metaSetup(t, 9)
	cfg.Rounds = 6
	rounds = nil
	var first int
	cfg.Progress = func(r int, _ string, _ Episode) {
		if first == 0 {
			first = r
		}
	}
	f2.SetMetaUpdates(false)
	got, err := f2.Embedding(nil, "high")
	require.NoError(t, err)
	assert.NotEqual(t, want, got, "different weights before resuming")
	start, eps, err = MetaTrain(ctx, tasks, ag2, f2, cfg)
	require.NoError(t, err)
	assert.Equal(t, 3, start)
	assert.Equal(t, 3, first, "the first episode run is round 3's")
	assert.Equal(t, []int{3, 4, 5}, rounds)
	assert.Equal(t, 3, eps["high"][0].Index)
	assert.True(t, f2.MetaUpdates(), "the saved run trained with meta updates on")
	agents, err := filepath.Glob(filepath.Join(dir, "agent-*.ckpt"))
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "agent-000006.ckpt")}, agents, "one agent checkpoint, the last round's")

	// Finished: nothing to do. Another seed: refused.
	tasks, ag3, f3 := metaSetup(t, 2)
	start, eps, err = MetaTrain(ctx, tasks, ag3, f3, cfg)
	require.NoError(t, err)
	assert.Equal(t, 6, start)
	assert.Empty(t, eps)
	cfg.Seed = 6
	_, _, err = MetaTrain(ctx, tasks, ag3, f3, cfg)
	assert.ErrorContains(t, err, "holds a run of seed 5 over 2 tasks (low…), not seed 6")
}
