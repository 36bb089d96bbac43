package train

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ppo"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

func env(t *testing.T, episode int) *sim.AppEnv {
	t.Helper()
	prof, err := calibration.Default()
	require.NoError(t, err)
	shape := make([]float64, 200)
	for i := range shape {
		shape[i] = 1 + 0.5*float64(i%20)/20
	}
	e, err := sim.NewEnv(prof, sim.App{
		Name: "t", Chain: []segments.Spec{{Name: "matMul", Size: 100}}, Speed: 1, Noise: 0.02,
		SLO:     gym.SLO{Kind: gym.LatencySLO, Target: 0.02},
		Load:    sim.Load{Shape: shape, Scale: 1500},
		Initial: sim.Allocation{Replicas: 1, CPU: 0.5, Memory: 512 * gym.MiB},
	}, sim.WithEpisode(episode))
	require.NoError(t, err)
	return e
}

func TestRunContinuousFake(t *testing.T) {
	// Always the middle of the box: 10–11 replicas, about 1 core, 1.6 GiB.
	f := agent.NewFake([]float64{0, 0, 0})
	var seen []Episode
	var observed [3]int
	var cpu [3]float64
	eps, err := Run(context.Background(), env(t, 10), f, Config{Episodes: 3, Seed: 1, Explore: true, Mapping: gym.Absolute, Progress: func(e Episode) { seen = append(seen, e) },
		Observe: func(ep, step int, info gym.Info) {
			assert.Equal(t, observed[ep], step, "steps in order")
			assert.Equal(t, step+1, info.Step)
			observed[ep]++
			cpu[ep] += info.Metrics.CPULimit / 10
		}})
	require.NoError(t, err)
	require.Len(t, eps, 3)
	assert.Equal(t, eps, seen)
	assert.Equal(t, [3]int{10, 10, 10}, observed, "Observe sees every step")
	for i, e := range eps {
		assert.InDelta(t, e.CPU, cpu[i], 1e-12, "the metrics the episode summarises")
		assert.Equal(t, 10, e.Steps)
		assert.Zero(t, e.Illegal)
		assert.True(t, e.Reward > 0 && e.Reward <= 20)
	}
	assert.Len(t, f.Observed, 30)
	assert.Equal(t, 30, f.Updates)
	assert.False(t, f.Observed[9].Done, "truncation is not termination: agents bootstrap")

	for _, e := range eps {
		assert.InDelta(t, 10.5, e.Replicas, 0.5, "the box's centre")
	}

	// Evaluation neither observes nor updates. Relative actions of 0 keep
	// the initial allocation.
	g := agent.NewFake([]float64{0, 0, 0})
	kept, err := Run(context.Background(), env(t, 10), g, Config{Episodes: 1})
	require.NoError(t, err)
	assert.Empty(t, g.Observed)
	assert.Equal(t, 1.0, kept[0].Replicas)
	assert.InDelta(t, 0.5, kept[0].CPU, 1e-9)
	assert.InDelta(t, 512*gym.MiB, kept[0].Memory, 1)
	// +1 doubles each step up to the bounds: 1, 2, 4, … replicas.
	up, err := Run(context.Background(), env(t, 10), agent.NewFake([]float64{1, 1, 1}), Config{Episodes: 1})
	require.NoError(t, err)
	assert.Greater(t, up[0].Replicas, 10.0)
	assert.Greater(t, up[0].CPU, 1.5)
	assert.Zero(t, g.Updates)
}

func TestRunDiscreteMovesAndPenalty(t *testing.T) {
	oneHot := func(m gym.Move) []float64 {
		a := make([]float64, gym.Moves)
		a[m] = 1
		return a
	}
	// Removing a replica from one is refused every step and penalised.
	bad, err := Run(context.Background(), env(t, 5), agent.NewFake(oneHot(gym.RemoveReplica)), Config{Episodes: 1, Discrete: true})
	require.NoError(t, err)
	assert.Equal(t, 5, bad[0].Illegal)
	noop, err := Run(context.Background(), env(t, 5), agent.NewFake(oneHot(gym.Noop)), Config{Episodes: 1, Discrete: true})
	require.NoError(t, err)
	assert.InDelta(t, noop[0].Reward-5*gym.IllegalPenalty, bad[0].Reward, 1e-9, "the penalty is subtracted")
	// Adding replicas is legal: one more per step.
	e := env(t, 5)
	up, err := Run(context.Background(), e, agent.NewFake(oneHot(gym.AddReplica)), Config{Episodes: 1, Discrete: true})
	require.NoError(t, err)
	assert.Zero(t, up[0].Illegal)
	assert.Equal(t, 6, e.Cluster().Allocation(0).Replicas)
}

func TestRunWithRealAgents(t *testing.T) {
	ctx := context.Background()
	d, err := ddpg.New(gym.StateDim, gym.ActDim, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	eps, err := Run(ctx, env(t, 20), d, Config{Episodes: 3, Seed: 1, Explore: true})
	require.NoError(t, err)
	assert.Len(t, eps, 3)
	p, err := ppo.NewDiscrete(gym.StateDim, int(gym.Moves), rand.New(rand.NewPCG(1, 2)), ppo.WithRolloutLen(20), ppo.WithBatchSize(10))
	require.NoError(t, err)
	eps, err = Run(ctx, env(t, 20), p, Config{Episodes: 3, Seed: 1, Explore: true, Discrete: true})
	require.NoError(t, err)
	assert.Equal(t, 3, eps[2].Updates, "one PPO update per 20-step rollout")
}

func TestRunErrors(t *testing.T) {
	_, err := Run(context.Background(), env(t, 5), agent.NewFake([]float64{0, 0, 0}), Config{})
	assert.ErrorContains(t, err, "episodes")
	f := agent.NewFake([]float64{0, 0, 0})
	f.UpdateErr = errors.New("boom")
	_, err = Run(context.Background(), env(t, 5), f, Config{Episodes: 1, Explore: true})
	assert.ErrorContains(t, err, "boom")
}

// TestRunActEvery holds the allocation between the agent's actions, taken
// at every ActEvery-th step only (windows counted within an episode, or
// across them when Continuous), and learns one transition per window that
// ends in the state the agent acts from next.
func TestRunActEvery(t *testing.T) {
	for _, tc := range []struct {
		every    int
		replicas []int // per step over two episodes of 5 steps
		acts     int
	}{
		{every: 0, replicas: []int{2, 4, 8, 16, 20, 2, 4, 8, 16, 20}, acts: 10},
		{every: 1, replicas: []int{2, 4, 8, 16, 20, 2, 4, 8, 16, 20}, acts: 10},
		// Windows of 3 steps within each episode: acting at steps 0 and
		// 3; the window the episode's end cuts is learnt there.
		{every: 3, replicas: []int{2, 2, 2, 4, 4, 2, 2, 2, 4, 4}, acts: 4},
	} {
		f := agent.NewFake([]float64{1, 0, 0}) // +1: twice the replicas
		var got []int
		_, err := Run(context.Background(), env(t, 5), f, Config{Episodes: 2, Seed: 1, Explore: true, ActEvery: tc.every,
			Observe: func(_, _ int, info gym.Info) { got = append(got, info.Metrics.Replicas) }})
		require.NoError(t, err)
		assert.Equal(t, tc.replicas, got, "every %d", tc.every)
		require.Len(t, f.Observed, tc.acts, "transitions only of the agent's actions")
		assert.Equal(t, tc.acts, f.Updates)
		// A window's transition ends in the state the agent acts from next.
		assert.Equal(t, f.Observed[0].Next, f.Observed[1].State, "every %d", tc.every)
	}
	// Continuous: windows run on across episodes (acting at steps 0, 3,
	// 6, 9 of 10), the last one learnt at the run's end.
	f := agent.NewFake([]float64{1, 0, 0})
	_, err := Run(context.Background(), env(t, 5), f, Config{Episodes: 2, Seed: 1, Explore: true, ActEvery: 3, Continuous: true})
	require.NoError(t, err)
	require.Len(t, f.Observed, 4)
	for i := range 3 {
		assert.Equal(t, f.Observed[i].Next, f.Observed[i+1].State, "window %d", i)
	}
	_, err = Run(context.Background(), env(t, 5), agent.NewFake([]float64{0, 0, 0}), Config{Episodes: 1, ActEvery: -1})
	assert.ErrorContains(t, err, "acts every -1 steps")
	_, err = Run(context.Background(), env(t, 5), agent.NewFake(make([]float64, gym.Moves)), Config{Episodes: 1, ActEvery: 2, Discrete: true})
	assert.ErrorContains(t, err, "discrete moves")
}

// TestRunContinuous: the episodes of a continuous run are windows of one
// running service (no reset between them), and a later continuous run on
// the same environment goes on from where the last left off.
func TestRunContinuous(t *testing.T) {
	replicas := func(e gym.Env, cfg Config) []int {
		var got []int
		cfg.Observe = func(_, _ int, info gym.Info) { got = append(got, info.Metrics.Replicas) }
		f := agent.NewFake([]float64{1, 0, 0}) // twice the replicas each step
		_, err := Run(context.Background(), e, f, cfg)
		require.NoError(t, err)
		return got
	}
	e := env(t, 3)
	assert.Equal(t, []int{2, 4, 8, 2, 4, 8}, replicas(e, Config{Episodes: 2, Seed: 1}), "each episode from a reset")
	e = env(t, 3)
	assert.Equal(t, []int{2, 4, 8, 16, 20, 20}, replicas(e, Config{Episodes: 2, Seed: 1, Continuous: true}), "one service from the first reset")
	assert.Equal(t, []int{20, 20, 20}, replicas(e, Config{Episodes: 1, Seed: 1, Continuous: true}), "going on where the last run left off")
	assert.Equal(t, []int{2, 4, 8}, replicas(e, Config{Episodes: 1, Seed: 1}), "reset")
}
