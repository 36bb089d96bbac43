package train

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/gym"
)

// fixedAgent acts with one action whatever it sees and records the
// rewards it is given to learn from; its multiplier is a DDPG agent's.
type fixedAgent struct {
	*ddpg.Agent
	action  float64
	learned []float64
}

func (f *fixedAgent) Act(dst, _ []float64, _ bool) []float64 {
	for i := range dst {
		dst[i] = f.action
	}
	return dst
}
func (f *fixedAgent) Observe(t agent.Transition)   { f.learned = append(f.learned, t.Reward) }
func (f *fixedAgent) Update() (agent.Stats, error) { return agent.Stats{}, nil }

// TestConstraint: a constrained agent learns from the reward less λ per
// violating step while episodes report the reward unpenalised, and λ moves
// by the dual ascent on each episode's share of violating steps; an agent
// without a multiplier is refused.
func TestConstraint(t *testing.T) {
	ctx := context.Background()
	newAgent := func() *fixedAgent {
		ag, err := ddpg.New(gym.StateDim, gym.ActDim, rand.New(rand.NewPCG(1, 2)))
		require.NoError(t, err)
		return &fixedAgent{Agent: ag, action: -0.6} // shrinks the allocation into violations
	}
	lag := agent.Lagrangian{Budget: 0.1, LR: 2, Max: 50}
	var violated [][]bool
	cfg := Config{Episodes: 3, Seed: 4, Explore: true, MaxSteps: 20, Constraint: &lag,
		Observe: func(ep, _ int, info gym.Info) {
			for len(violated) <= ep {
				violated = append(violated, nil)
			}
			violated[ep] = append(violated[ep], info.SLOViolated)
		}}
	plain, constrained := newAgent(), newAgent()
	free := cfg
	free.Constraint, free.Observe = nil, nil
	want, err := Run(ctx, env(t, 20), plain, free)
	require.NoError(t, err)
	got, err := Run(ctx, env(t, 20), constrained, cfg)
	require.NoError(t, err)
	assert.Equal(t, want, got, "episodes report the reward unpenalised")

	lambda, k, any := 0.0, 0, false
	for ep, steps := range violated {
		n := 0
		for _, v := range steps {
			penalty := 0.0
			if v {
				penalty, n, any = lambda, n+1, true
			}
			assert.InDelta(t, plain.learned[k]-penalty, constrained.learned[k], 1e-12, "episode %d, transition %d", ep, k)
			k++
		}
		lambda = lag.Update(lambda, float64(n)/float64(len(steps)))
	}
	require.True(t, any, "the test's allocation must violate the SLO")
	assert.Positive(t, lambda)
	assert.InDelta(t, lambda, constrained.Multiplier(), 1e-12)

	// A greedy evaluation leaves λ alone.
	_, err = Run(ctx, env(t, 20), constrained, Config{Episodes: 1, Seed: 4, MaxSteps: 20, Constraint: &lag})
	require.NoError(t, err)
	assert.InDelta(t, lambda, constrained.Multiplier(), 1e-12)

	type plainAgent struct{ agent.Agent }
	_, err = Run(ctx, env(t, 20), plainAgent{plain}, cfg)
	assert.ErrorContains(t, err, "keeps no Lagrange multiplier")
	bad := agent.Lagrangian{Budget: 0.1}
	cfg.Constraint = &bad
	_, err = Run(ctx, env(t, 20), newAgent(), cfg)
	assert.ErrorContains(t, err, "learning rate")
}
