package autoscaler

import "github.com/aware-autoscaler/aware/gym"

// Evaluation is what one step's measurements mean to an agent.
type Evaluation struct {
	// State is the normalised AWARE state (gym.State).
	State []float64
	// SP is the SLO preservation ratio.
	SP float64
	// Reward is gym.Reward with the profile's α (gym.DefaultAlpha without
	// a profile).
	Reward float64
}

// Evaluate computes the state, SLO preservation and reward of a step's
// measurements with the same functions as the simulator. prevArrival is
// the previous step's arrival rate (for the load-change feature).
func Evaluate(p Policy, m gym.Metrics, prevArrival float64) Evaluation {
	alpha := gym.DefaultAlpha
	if p.Agent != nil {
		alpha = p.Agent.AlphaOrDefault()
	}
	sp := gym.SLOPreservation(p.SLO(), m)
	cpuU, memU := gym.Utilization(m)
	return Evaluation{
		State:  gym.State(make([]float64, gym.StateDim), m, sp, prevArrival, p.GymBounds(), gym.DefaultCapacities()),
		SP:     sp,
		Reward: gym.Reward(alpha, sp, cpuU, memU),
	}
}
