package extending_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// moveBandit is an agent of our own: an ε-greedy bandit over the seven
// discrete moves (gym.Move), blind to the state, that keeps the mean
// reward of each move.
type moveBandit struct {
	rnd    *rand.Rand
	eps    float64
	Sum, N []float64 // per move; exported for Save
}

func newMoveBandit(rnd *rand.Rand) *moveBandit {
	return &moveBandit{rnd: rnd, eps: 0.2, Sum: make([]float64, gym.Moves), N: make([]float64, gym.Moves)}
}

func (b *moveBandit) Act(dst, _ []float64, explore bool) []float64 {
	best := 0
	for k := range b.N {
		if b.N[k] == 0 || b.Sum[k]/b.N[k] > b.Sum[best]/max(b.N[best], 1) {
			best = k
			if b.N[k] == 0 {
				break
			}
		}
	}
	if explore && b.rnd.Float64() < b.eps {
		best = b.rnd.IntN(len(b.N))
	}
	for k := range dst {
		dst[k] = 0
	}
	dst[best] = 1
	return dst
}

func (b *moveBandit) Observe(t agent.Transition) {
	k := 0
	for i, v := range t.Action {
		if v > t.Action[k] {
			k = i
		}
	}
	b.Sum[k] += t.Reward
	b.N[k]++
}

func (b *moveBandit) Update() (agent.Stats, error) { return agent.Stats{}, nil }

func (b *moveBandit) Save(path string) error {
	js, err := json.Marshal(b)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, js, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (b *moveBandit) Load(path string) error {
	js, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(js, b)
}

func init() {
	train.RegisterAlgorithm(train.Algorithm{Name: "move-bandit", Discrete: true, Episodes: 50,
		New: func(_ int, rnd *rand.Rand) (agent.Agent, error) { return newMoveBandit(rnd), nil }})
}

// TestAgentFromOutside: the registered algorithm is built by name (so
// `aware train --algo move-bandit` and `aware compare --algos …` train it),
// trains on a generated application in the simulator, and its checkpoint
// round-trips.
func TestAgentFromOutside(t *testing.T) {
	assert.Equal(t, []string{train.DDPG, train.PPO, train.PPOContinuous, "move-bandit"}, train.Algos())
	assert.Equal(t, 50, train.DefaultEpisodes("move-bandit"))
	_, _, err := train.NewAgent("sarsa", gym.StateDim, 1)
	assert.ErrorContains(t, err, `unknown algorithm "sarsa" (want one of ddpg, ppo, ppo-continuous, move-bandit)`)

	ag, discrete, err := train.NewAgent("move-bandit", gym.StateDim, 1)
	require.NoError(t, err)
	require.True(t, discrete)
	prof, simApps := simulated(t, 3)
	env, err := sim.NewEnv(prof, simApps[0])
	require.NoError(t, err)
	eps, err := train.Run(context.Background(), env, ag, train.Config{Episodes: 3, Seed: 1, Discrete: true, Explore: true})
	require.NoError(t, err)
	require.Len(t, eps, 3)
	b := ag.(*moveBandit)
	total := 0.0
	for _, n := range b.N {
		total += n
	}
	assert.Equal(t, float64(eps[0].Steps+eps[1].Steps+eps[2].Steps), total, "it saw every step")

	path := filepath.Join(t.TempDir(), "bandit.json")
	require.NoError(t, ag.Save(path))
	again := newMoveBandit(rand.New(rand.NewPCG(2, 2)))
	require.NoError(t, again.Load(path))
	assert.Equal(t, b.Sum, again.Sum)
}
