package agent

import (
	"fmt"
	"math"
)

// Lagrangian is the dual ascent of a constraint E[cost] ≤ Budget on a
// per-step cost (an SLO violation: 1, else 0): after each episode of mean
// cost c the multiplier moves to clip(λ + LR·(c − Budget), 0, Max), so it
// grows while the constraint is violated and shrinks back when there is
// slack; the policy learns from Shape's penalised reward.
type Lagrangian struct {
	// Budget is the mean cost per step allowed (a share of steps that
	// violate the SLO).
	Budget float64 `json:"budget"`
	// LR is the multiplier's step per episode and unit of excess cost.
	LR float64 `json:"lr"`
	// Max bounds the multiplier (a budget that cannot be met would
	// otherwise drive it without end).
	Max float64 `json:"max"`
}

// Validate refuses a constraint that cannot be applied.
func (l Lagrangian) Validate() error {
	for name, v := range map[string]float64{"budget": l.Budget, "learning rate": l.LR, "bound": l.Max} {
		if !(v >= 0) || math.IsInf(v, 1) {
			return fmt.Errorf("agent: lagrangian %s %v must be finite and not negative", name, v)
		}
	}
	if l.LR == 0 || l.Max == 0 {
		return fmt.Errorf("agent: lagrangian learning rate %v and bound %v must be positive", l.LR, l.Max)
	}
	return nil
}

// Update is the multiplier after an episode whose mean cost per step was
// meanCost.
func (l Lagrangian) Update(lambda, meanCost float64) float64 {
	return min(l.Max, max(0, lambda+l.LR*(meanCost-l.Budget)))
}

// Shape is the reward a constrained agent learns from: r − λ·cost.
func Shape(r, lambda, cost float64) float64 { return r - lambda*cost }
