package ddpg

import (
	"fmt"
	"slices"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// meta is the JSON metadata of a DDPG checkpoint.
type meta struct {
	Algo      string  `json:"algo"`
	StateDim  int     `json:"stateDim"`
	ActionDim int     `json:"actionDim"`
	Hidden    []int   `json:"hidden"`
	Epsilon   float64 `json:"epsilon"`
	Lambda    float64 `json:"lambda,omitempty"`
	Steps     int     `json:"steps"`
	Updates   int     `json:"updates"`
}

// Save writes the four networks, both optimisers' state, the OU noise state,
// ε, the Lagrange multiplier and the step and update counts to path
// atomically. The replay buffer and
// the random source are not saved.
func (a *Agent) Save(path string) error {
	c := rl.NewCheckpoint()
	c.PutParams("actor", a.actor.Params())
	c.PutParams("critic", a.critic.Params())
	c.PutParams("actor-target", a.actorTarget.Params())
	c.PutParams("critic-target", a.criticTarget.Params())
	c.PutAdam("actor-adam", a.actorOpt)
	c.PutAdam("critic-adam", a.criticOpt)
	c.Put("ou-noise", a.ou)
	err := c.SetMeta(meta{Algo: "ddpg", StateDim: a.stateDim, ActionDim: a.actionDim, Hidden: a.cfg.Hidden,
		Epsilon: a.eps, Lambda: a.lambda, Steps: a.steps, Updates: a.updates})
	if err == nil {
		err = rl.WriteCheckpoint(path, c)
	}
	if err != nil {
		return fmt.Errorf("ddpg: Save: %w", err)
	}
	return nil
}

// Load restores state written by Save of an agent with the same dimensions
// and hidden layers. On error the agent is unchanged.
func (a *Agent) Load(path string) error {
	c, err := rl.ReadCheckpoint(path)
	if err != nil {
		return fmt.Errorf("ddpg: Load: %w", err)
	}
	var m meta
	if err := c.Meta(&m); err != nil {
		return fmt.Errorf("ddpg: Load %s: %w", path, err)
	}
	if m.Algo != "ddpg" || m.StateDim != a.stateDim || m.ActionDim != a.actionDim || !slices.Equal(m.Hidden, a.cfg.Hidden) {
		return fmt.Errorf("ddpg: Load %s: checkpoint is %s state %d action %d hidden %v, agent is ddpg state %d action %d hidden %v",
			path, m.Algo, m.StateDim, m.ActionDim, m.Hidden, a.stateDim, a.actionDim, a.cfg.Hidden)
	}
	ou, ok := c.Get("ou-noise")
	if !ok || len(ou) != a.actionDim {
		return fmt.Errorf("ddpg: Load %s: entry \"ou-noise\" missing or not %d values", path, a.actionDim)
	}
	if err := c.Restore(
		rl.Restore{Name: "actor", Params: a.actor.Params(), AdamName: "actor-adam", Adam: a.actorOpt},
		rl.Restore{Name: "critic", Params: a.critic.Params(), AdamName: "critic-adam", Adam: a.criticOpt},
		rl.Restore{Name: "actor-target", Params: a.actorTarget.Params()},
		rl.Restore{Name: "critic-target", Params: a.criticTarget.Params()},
	); err != nil {
		return fmt.Errorf("ddpg: Load %s: %w", path, err)
	}
	copy(a.ou, ou)
	a.eps, a.lambda, a.steps, a.updates = m.Epsilon, m.Lambda, m.Steps, m.Updates
	return nil
}
