package ppo

import (
	"fmt"
	"math"
	"slices"

	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

// meta is the JSON metadata of a PPO checkpoint.
type meta struct {
	Algo      string `json:"algo"`
	Head      string `json:"head"`
	StateDim  int    `json:"stateDim"`
	ActionDim int    `json:"actionDim"`
	Hidden    []int  `json:"hidden"`
	Steps     int    `json:"steps"`
	Updates   int    `json:"updates"`
	// Lambda is a constrained agent's Lagrange multiplier.
	Lambda float64 `json:"lambda,omitempty"`
}

// Save writes the actor, critic and log-std, their optimisers' state, the
// Lagrange multiplier and the step and update counts to path atomically. The rollout in progress and the
// random source are not saved.
func (a *Agent) Save(path string) error {
	c := rl.NewCheckpoint()
	c.PutParams("actor", a.actor.Params())
	c.PutParams("critic", a.critic.Params())
	c.PutParams("log-std", a.logStd)
	c.PutAdam("actor-adam", a.actorOpt)
	c.PutAdam("critic-adam", a.criticOpt)
	c.PutAdam("log-std-adam", a.logStdOpt)
	err := c.SetMeta(meta{Algo: "ppo", Head: a.head.String(), StateDim: a.stateDim, ActionDim: a.actionDim,
		Hidden: a.cfg.Hidden, Steps: a.steps, Updates: a.updates, Lambda: a.lambda})
	if err == nil {
		err = rl.WriteCheckpoint(path, c)
	}
	if err != nil {
		return fmt.Errorf("ppo: Save: %w", err)
	}
	return nil
}

// Load restores state written by Save of an agent with the same head,
// dimensions and hidden layers, and discards the rollout in progress (it was
// collected by the previous policy). On error the agent is unchanged.
func (a *Agent) Load(path string) error {
	c, err := rl.ReadCheckpoint(path)
	if err != nil {
		return fmt.Errorf("ppo: Load: %w", err)
	}
	var m meta
	if err := c.Meta(&m); err != nil {
		return fmt.Errorf("ppo: Load %s: %w", path, err)
	}
	if m.Algo != "ppo" || m.Head != a.head.String() || m.StateDim != a.stateDim || m.ActionDim != a.actionDim || !slices.Equal(m.Hidden, a.cfg.Hidden) {
		return fmt.Errorf("ppo: Load %s: checkpoint is %s %s state %d action %d hidden %v, agent is ppo %s state %d action %d hidden %v",
			path, m.Algo, m.Head, m.StateDim, m.ActionDim, m.Hidden, a.head, a.stateDim, a.actionDim, a.cfg.Hidden)
	}
	if err := c.Restore(
		rl.Restore{Name: "actor", Params: a.actor.Params(), AdamName: "actor-adam", Adam: a.actorOpt},
		rl.Restore{Name: "critic", Params: a.critic.Params(), AdamName: "critic-adam", Adam: a.criticOpt},
		rl.Restore{Name: "log-std", Params: a.logStd, AdamName: "log-std-adam", Adam: a.logStdOpt},
	); err != nil {
		return fmt.Errorf("ppo: Load %s: %w", path, err)
	}
	a.steps, a.updates, a.lambda = m.Steps, m.Updates, m.Lambda
	a.states, a.next, a.raw, a.index, a.rewards, a.done = a.states[:0], a.next[:0], a.raw[:0], a.index[:0], a.rewards[:0], a.done[:0]
	a.hasPending = false
	return nil
}

// Multiplier is the Lagrange multiplier of a constrained agent
// (agent.Constrained; 0 for one trained without a constraint).
func (a *Agent) Multiplier() float64 { return a.lambda }

// SetMultiplier sets the Lagrange multiplier, which the checkpoint keeps.
func (a *Agent) SetMultiplier(lambda float64) error {
	if !(lambda >= 0) || math.IsInf(lambda, 1) {
		return fmt.Errorf("ppo: SetMultiplier: λ %v must be finite and not negative", lambda)
	}
	a.lambda = lambda
	return nil
}

var _ agent.Constrained = (*Agent)(nil)
