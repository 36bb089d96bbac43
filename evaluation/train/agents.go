package train

import (
	"fmt"
	"math/rand/v2"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ppo"
	"github.com/aware-autoscaler/aware/gym"
)

// The algorithms NewAgent builds.
const (
	DDPG          = "ddpg"           // FIRM's DDPG, continuous actions
	PPO           = "ppo"            // PPO over the artifact's seven moves
	PPOContinuous = "ppo-continuous" // PPO with a Gaussian head
)

// Algos lists the algorithms in table order.
var Algos = []string{DDPG, PPO, PPOContinuous}

// NewAgent returns a fresh agent of algo for stateDim-wide states (the
// AWARE state plus any embedding) with weights, noise and minibatches drawn
// from seed, and whether it acts with discrete moves.
func NewAgent(algo string, stateDim int, seed uint64) (agent.Agent, bool, error) {
	rnd := rand.New(rand.NewPCG(seed, 0xA11CE))
	switch algo {
	case DDPG:
		a, err := ddpg.New(stateDim, gym.ActDim, rnd)
		return a, false, err
	case PPO:
		a, err := ppo.NewDiscrete(stateDim, int(gym.Moves), rnd)
		return a, true, err
	case PPOContinuous:
		a, err := ppo.NewContinuous(stateDim, gym.ActDim, rnd)
		return a, false, err
	}
	return nil, false, fmt.Errorf("train: unknown algorithm %q (want %s, %s or %s)", algo, DDPG, PPO, PPOContinuous)
}
