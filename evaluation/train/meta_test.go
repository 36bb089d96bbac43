package train

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ppo"
	"github.com/aware-autoscaler/aware/gym"
)

// TestMetaRunLearnsTasksThroughTheEmbedding trains DDPG on the two tasks
// of TestAgentsUseEmbedding, whose own states are identical, so that the
// agent can tell them apart only through the embedding the meta learner
// computes from each task's recent trajectories: jointly (meta updates on,
// the critic's loss back-propagated into the meta learner) and with the
// meta learner frozen at its initial weights. After training the agent
// picks each task's CPU limit in both. On this easy pair a frozen embedder
// separates the tasks too (their rewards differ at every action); what
// meta-training is worth is measured across the pool (issue 16's
// identification and adaptation measurements). With the actor loss instead
// (ddpg.ActorLoss or BothLosses) the embedding's ReLU units all die by
// round 50 and the agent picks 1.07–1.10 cores for both tasks.
func TestMetaRunLearnsTasksThroughTheEmbedding(t *testing.T) {
	if testing.Short() {
		t.Skip("trains an agent")
	}
	for _, joint := range []bool{true, false} {
		name := map[bool]string{true: "joint", false: "frozen"}[joint]
		t.Run(name, func(t *testing.T) { metaRunTasks(t, joint) })
	}
}

// lowHigh are the two tasks of TestAgentsUseEmbedding, whose own states
// are identical, wrapped for embeddings of e values (zeros at first).
func lowHigh(t *testing.T, e int) []MetaTask {
	t.Helper()
	zero := make([]float64, e)
	low, err := gym.Embed(taskEnv{target: 0.3}, zero)
	require.NoError(t, err)
	high, err := gym.Embed(taskEnv{target: 1.8}, zero)
	require.NoError(t, err)
	return []MetaTask{{Name: "low", Env: low}, {Name: "high", Env: high}}
}

func metaRunTasks(t *testing.T, joint bool) {
	const E = 4
	tasks := lowHigh(t, E)

	rnd := rand.New(rand.NewPCG(1, 2))
	stateDim := tasks[0].Env.ObservationSpace().Dim()
	ag, err := ddpg.New(stateDim, gym.ActDim, rnd, ddpg.WithEmbedding(E, ddpg.CriticLoss))
	require.NoError(t, err)
	own := stateDim - E
	emb, err := meta.NewEmbedder(meta.Config{Features: own + gym.ActDim + 1, Hidden: 12, Layers: 1, FC: 16, Embed: E}, rnd)
	require.NoError(t, err)
	opts := meta.DefaultOptions(20)
	opts.M, opts.LR = 4, 1e-2
	f, err := meta.NewFLASH(emb, opts)
	require.NoError(t, err)
	for _, tk := range tasks {
		require.NoError(t, f.Register(meta.Task{Name: tk.Name, StateDim: own, ActionDim: gym.ActDim}))
	}
	f.SetMetaUpdates(joint)
	eps, err := MetaRun(context.Background(), tasks, ag, f, MetaConfig{Rounds: 150, Seed: 1, MaxSteps: 20, Mapping: gym.Absolute})
	require.NoError(t, err)
	require.Len(t, eps["low"], 150)
	f.SetMetaUpdates(false)

	act, target := make([]float64, gym.ActDim), make([]float64, gym.ActDim)
	cpu := func(tk MetaTask) float64 {
		e, err := f.Embedding(nil, tk.Name)
		require.NoError(t, err)
		require.NoError(t, tk.Env.SetEmbedding(e))
		obs, _, err := tk.Env.Reset(context.Background(), 0)
		require.NoError(t, err)
		ag.Act(act, obs, false)
		gym.Denormalize(target, act, tk.Env.ActionSpace())
		return target[gym.ActCPU]
	}
	lo, hi := cpu(tasks[0]), cpu(tasks[1])
	el, _ := f.Embedding(nil, "low")
	eh, _ := f.Embedding(nil, "high")
	t.Logf("CPU limit chosen: low task %.2f (target 0.3), high task %.2f (target 1.8); similarity of the embeddings %.3f; last rewards %.2f, %.2f",
		lo, hi, meta.Similarity(el, eh), eps["low"][149].Reward, eps["high"][149].Reward)
	assert.InDelta(t, 0.3, lo, 0.3, "low task")
	assert.InDelta(t, 1.8, hi, 0.3, "high task")
	assert.Less(t, meta.Similarity(el, eh), 0.9, "the tasks' embeddings differ")
}

// TestMetaRunWithPPO runs the joint training with both PPO heads: episodes
// run, the agent updates, and its embedding gradient reaches the meta
// learner (whose weights move).
func TestMetaRunWithPPO(t *testing.T) {
	for _, discrete := range []bool{false, true} {
		t.Run(map[bool]string{false: "continuous", true: "discrete"}[discrete], func(t *testing.T) {
			const E = 3
			tasks := lowHigh(t, E)
			rnd := rand.New(rand.NewPCG(4, 5))
			stateDim := tasks[0].Env.ObservationSpace().Dim()
			var err error
			opts := []ppo.Option{ppo.WithEmbedding(E), ppo.WithRolloutLen(20), ppo.WithHidden(8)}
			var ag agent.EmbeddingLearner
			actDim := gym.ActDim
			if discrete {
				actDim = int(gym.Moves)
				ag, err = ppo.NewDiscrete(stateDim, actDim, rnd, opts...)
			} else {
				ag, err = ppo.NewContinuous(stateDim, gym.ActDim, rnd, opts...)
			}
			require.NoError(t, err)
			emb, err := meta.NewEmbedder(meta.Config{Features: stateDim - E + actDim + 1, Hidden: 4, Layers: 1, FC: 5, Embed: E}, rnd)
			require.NoError(t, err)
			before := append([]float64(nil), emb.Params()[0].Values()...)
			mo := meta.DefaultOptions(20)
			mo.M = 2
			f, err := meta.NewFLASH(emb, mo)
			require.NoError(t, err)
			for _, tk := range tasks {
				require.NoError(t, f.Register(meta.Task{Name: tk.Name, StateDim: stateDim - E, ActionDim: actDim}))
			}
			f.SetMetaUpdates(true)
			eps, err := MetaRun(context.Background(), tasks, ag, f, MetaConfig{Rounds: 4, Seed: 1, MaxSteps: 20, Discrete: discrete})
			require.NoError(t, err)
			require.Len(t, eps["high"], 4)
			assert.Positive(t, eps["high"][3].Updates, "PPO updated")
			f.SetMetaUpdates(false) // applies the pending gradient
			assert.NotEqual(t, before, emb.Params()[0].Values(), "the meta learner trained through PPO's gradient")
		})
	}
}
