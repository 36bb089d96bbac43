package train

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ppo"
	"github.com/aware-autoscaler/aware/gym"
)

// The algorithms built in.
const (
	DDPG          = "ddpg"           // FIRM's DDPG, continuous actions
	PPO           = "ppo"            // PPO over the artifact's seven moves
	PPOContinuous = "ppo-continuous" // PPO with a Gaussian head
)

// Algorithm is an agent `aware train`, `aware compare` and Compare can
// build by name.
type Algorithm struct {
	Name string
	// Discrete says the agent emits one-hot gym.Move choices (gym.Moves
	// wide) instead of gym.ActDim continuous actions.
	Discrete bool
	// Episodes is its default training budget: the episodes at which it
	// had converged on the pool's applications.
	Episodes int
	// New returns a fresh agent for stateDim-wide states (the AWARE state
	// plus any embedding) with weights, noise and minibatches drawn from
	// rnd.
	New func(stateDim int, rnd *rand.Rand) (agent.Agent, error)
}

var (
	algoMu     sync.RWMutex
	algorithms []Algorithm
)

func init() {
	RegisterAlgorithm(Algorithm{Name: DDPG, Episodes: 1000, New: func(d int, rnd *rand.Rand) (agent.Agent, error) {
		return ddpg.New(d, gym.ActDim, rnd)
	}})
	RegisterAlgorithm(Algorithm{Name: PPO, Discrete: true, Episodes: 1500, New: func(d int, rnd *rand.Rand) (agent.Agent, error) {
		return ppo.NewDiscrete(d, int(gym.Moves), rnd)
	}})
	RegisterAlgorithm(Algorithm{Name: PPOContinuous, Episodes: 1500, New: func(d int, rnd *rand.Rand) (agent.Agent, error) {
		return ppo.NewContinuous(d, gym.ActDim, rnd)
	}})
}

// RegisterAlgorithm adds an algorithm (docs/extending.md). It panics on an
// empty or taken name, no New or a budget that is not positive:
// programming errors, as with database/sql.Register.
func RegisterAlgorithm(a Algorithm) {
	algoMu.Lock()
	defer algoMu.Unlock()
	switch {
	case a.Name == "" || a.New == nil || a.Episodes < 1:
		panic(fmt.Sprintf("train: RegisterAlgorithm %q: name, New and a positive Episodes are required", a.Name))
	case slices.ContainsFunc(algorithms, func(o Algorithm) bool { return o.Name == a.Name }):
		panic("train: algorithm " + a.Name + " registered twice")
	}
	algorithms = append(algorithms, a)
}

// Algos lists the algorithms in table order: the built-in ones, then the
// registered ones in registration order.
func Algos() []string {
	algoMu.RLock()
	defer algoMu.RUnlock()
	return algoNames()
}

// algoNames lists the algorithms' names; the caller holds algoMu.
func algoNames() []string {
	out := make([]string, len(algorithms))
	for i, a := range algorithms {
		out[i] = a.Name
	}
	return out
}

// FindAlgorithm is the named algorithm, or an error listing the known ones.
func FindAlgorithm(name string) (Algorithm, error) {
	algoMu.RLock()
	defer algoMu.RUnlock()
	for _, a := range algorithms {
		if a.Name == name {
			return a, nil
		}
	}
	return Algorithm{}, fmt.Errorf("train: unknown algorithm %q (want one of %s)", name, strings.Join(algoNames(), ", "))
}

// DefaultEpisodes is the named algorithm's default training budget (0 when
// unknown).
func DefaultEpisodes(algo string) int {
	a, err := FindAlgorithm(algo)
	if err != nil {
		return 0
	}
	return a.Episodes
}

// NewAgent returns a fresh agent of algo for stateDim-wide states (the
// AWARE state plus any embedding) with weights, noise and minibatches drawn
// from seed, and whether it acts with discrete moves.
func NewAgent(algo string, stateDim int, seed uint64) (agent.Agent, bool, error) {
	a, err := FindAlgorithm(algo)
	if err != nil {
		return nil, false, err
	}
	ag, err := a.New(stateDim, rand.New(rand.NewPCG(seed, 0xA11CE)))
	return ag, a.Discrete, err
}
