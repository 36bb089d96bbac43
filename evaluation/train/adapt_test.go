package train

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/gym"
)

func TestConvergenceRule(t *testing.T) {
	rule := ConvergenceRule{Window: 3, Tolerance: 0.1}
	for _, tc := range []struct {
		name    string
		rewards []float64
		ref     float64
		want    int
		ok      bool
	}{
		{"at once", []float64{100, 100, 100, 100}, 100, 3, true},
		{"after a ramp", []float64{0, 50, 80, 95, 100, 100, 100}, 100, 5, true}, // (80+95+100)/3 = 91.7 ≥ 90
		{"boundary: exactly within tolerance", []float64{90, 90, 90}, 100, 3, true},
		{"never", []float64{10, 20, 30, 40}, 100, 4, false},
		{"reached and fell away: not converged there", []float64{100, 100, 100, 50, 50, 50, 100, 100, 100, 100}, 100, 9, true},
		{"fell away at the end", []float64{100, 100, 100, 100, 0}, 100, 5, false},
		{"negative rewards", []float64{-50, -12, -10, -10}, -10, 4, true}, // −10.67 ≥ −11; −24 < −11
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok, err := rule.Episodes(tc.rewards, tc.ref)
			require.NoError(t, err)
			assert.Equal(t, tc.want, n)
			assert.Equal(t, tc.ok, ok)
		})
	}
	f, err := rule.Final([]float64{1, 2, 3, 4})
	require.NoError(t, err)
	assert.InDelta(t, 3, f, 1e-12)
	_, _, err = rule.Episodes([]float64{1, 2}, 1)
	assert.ErrorContains(t, err, "fewer than its window of 3")
	_, err = ConvergenceRule{Window: 0}.Final([]float64{1})
	assert.ErrorContains(t, err, "window 0 must be positive")
}

func TestPlateauRule(t *testing.T) {
	rule := ConvergenceRule{Window: 2, Tolerance: 0.1}
	for _, tc := range []struct {
		name    string
		rewards []float64
		want    int
		ok      bool
	}{
		{"flat from the start", []float64{50, 50, 50, 50, 50}, 4, true},
		{"a ramp, then flat at a low level", []float64{0, 10, 20, 30, 30, 30, 30, 30}, 7, true}, // (30+30) vs (30+30) at 7; at 6 (30,30) vs (20,30): 20 % off
		{"within the tolerance", []float64{100, 100, 95, 95}, 4, true},
		{"still climbing", []float64{10, 20, 30, 40, 50, 60}, 6, false},
		{"flat, then moved again", []float64{50, 50, 50, 50, 80, 80}, 6, false},
		{"negative rewards", []float64{-100, -100, -96, -96, -96}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok, err := rule.Plateau(tc.rewards)
			require.NoError(t, err)
			assert.Equal(t, tc.want, n)
			assert.Equal(t, tc.ok, ok)
		})
	}
	_, _, err := rule.Plateau([]float64{1, 2, 3})
	assert.ErrorContains(t, err, "fewer than its two windows of 2")
}

// TestAdapt: the frozen meta learner embeds the new application's own
// episodes (zeros before the first) while the agent trains on.
func TestAdapt(t *testing.T) {
	const E = 3
	rnd := rand.New(rand.NewPCG(4, 2))
	e, err := meta.NewEmbedder(meta.Config{Features: gym.StateDim + gym.ActDim + 1, Hidden: 4, Layers: 1, FC: 6, Embed: E, Output: rl.Tanh}, rnd)
	require.NoError(t, err)
	before := slices.Clone(e.Params()[0].Values())
	ag, err := ddpg.New(gym.StateDim+E, gym.ActDim, rnd, ddpg.WithEmbedding(E, ddpg.CriticLoss))
	require.NoError(t, err)
	opts := meta.DefaultOptions(20)
	opts.M = 4
	spy := &embeddingSpy{Agent: ag}
	eps, err := Adapt(context.Background(), env(t, 20), "new-app", spy, e, opts,
		AdaptConfig{Episodes: 5, Seed: 9, MaxSteps: 20})
	require.NoError(t, err)
	require.Len(t, eps, 5)
	assert.Equal(t, before, e.Params()[0].Values(), "the meta learner stays frozen")
	assert.Positive(t, eps[4].Updates, "the agent trains")
	seen := spy.seen
	require.Len(t, seen, 5)
	assert.Equal(t, []float64{0, 0, 0}, seen[0], "no episode of its own yet: a zero embedding")
	assert.NotEqual(t, seen[1], seen[0], "then the embedding of its own episodes")
	assert.NotEqual(t, seen[2], seen[1], "refreshed as episodes come in")
}

// TestAdaptFixedEmbedding: an ablation's fixed embedding is the one every
// episode runs with, whatever the application's own episodes; one of
// another width, or with meta updates on, is refused.
func TestAdaptFixedEmbedding(t *testing.T) {
	const E = 3
	rnd := rand.New(rand.NewPCG(4, 2))
	e, err := meta.NewEmbedder(meta.Config{Features: gym.StateDim + gym.ActDim + 1, Hidden: 4, Layers: 1, FC: 6, Embed: E, Output: rl.Tanh}, rnd)
	require.NoError(t, err)
	ag, err := ddpg.New(gym.StateDim+E, gym.ActDim, rnd, ddpg.WithEmbedding(E, ddpg.CriticLoss))
	require.NoError(t, err)
	opts := meta.DefaultOptions(20)
	opts.M = 4
	for _, fixed := range [][]float64{{0, 0, 0}, {0.5, -0.25, 1}} {
		spy := &embeddingSpy{Agent: ag}
		_, err := Adapt(context.Background(), env(t, 20), "new-app", spy, e, opts,
			AdaptConfig{Episodes: 4, Seed: 9, MaxSteps: 20, Fixed: fixed})
		require.NoError(t, err)
		require.Len(t, spy.seen, 4)
		for i, got := range spy.seen {
			assert.Equal(t, fixed, got, "episode %d", i)
		}
	}
	_, err = Adapt(context.Background(), env(t, 20), "new-app", ag, e, opts, AdaptConfig{Episodes: 2, Seed: 9, MaxSteps: 20, Fixed: []float64{0, 0}})
	assert.ErrorContains(t, err, "fixed embedding of 2 values for a meta learner embedding 3")
	f, err := meta.NewFLASH(e, opts)
	require.NoError(t, err)
	require.NoError(t, f.Register(meta.Task{Name: "a", StateDim: gym.StateDim, ActionDim: gym.ActDim}))
	f.SetMetaUpdates(true)
	emb, err := gym.Embed(env(t, 20), make([]float64, E))
	require.NoError(t, err)
	_, err = MetaRun(context.Background(), []MetaTask{{Name: "a", Env: emb}}, ag, f, MetaConfig{Rounds: 1, Seed: 1, MaxSteps: 20, Fixed: make([]float64, E)})
	assert.ErrorContains(t, err, "fixed embedding with meta updates on")
}

// embeddingSpy records the embeddings an agent is given.
type embeddingSpy struct {
	*ddpg.Agent
	seen [][]float64
}

func (s *embeddingSpy) SetEmbedding(task int, emb []float64) error {
	s.seen = append(s.seen, slices.Clone(emb))
	return s.Agent.SetEmbedding(task, emb)
}
