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
	Steps     int     `json:"steps"`
	Updates   int     `json:"updates"`
}

// Save writes the four networks, both optimisers' state, the OU noise state,
// ε and the step and update counts to path atomically. The replay buffer and
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
		Epsilon: a.eps, Steps: a.steps, Updates: a.updates})
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
	// Load into copies first so that a failure leaves the agent unchanged.
	actor, critic, at, ct := a.actor.Clone(), a.critic.Clone(), a.actorTarget.Clone(), a.criticTarget.Clone()
	aopt, copt := rl.NewAdam(a.cfg.ActorLR), rl.NewAdam(a.cfg.CriticLR)
	steps := []struct {
		name string
		p    *rl.Params
	}{{"actor", actor.Params()}, {"critic", critic.Params()}, {"actor-target", at.Params()}, {"critic-target", ct.Params()}}
	for _, s := range steps {
		if err := c.LoadParams(s.name, s.p); err != nil {
			return fmt.Errorf("ddpg: Load %s: %w", path, err)
		}
	}
	if err := c.LoadAdam("actor-adam", aopt, actor.Params()); err != nil {
		return fmt.Errorf("ddpg: Load %s: %w", path, err)
	}
	if err := c.LoadAdam("critic-adam", copt, critic.Params()); err != nil {
		return fmt.Errorf("ddpg: Load %s: %w", path, err)
	}
	ou, ok := c.Get("ou-noise")
	if !ok || len(ou) != a.actionDim {
		return fmt.Errorf("ddpg: Load %s: entry \"ou-noise\" missing or not %d values", path, a.actionDim)
	}
	copy(a.actor.Params().Values(), actor.Params().Values())
	copy(a.critic.Params().Values(), critic.Params().Values())
	copy(a.actorTarget.Params().Values(), at.Params().Values())
	copy(a.criticTarget.Params().Values(), ct.Params().Values())
	*a.actorOpt, *a.criticOpt = *aopt, *copt
	copy(a.ou, ou)
	a.eps, a.steps, a.updates = m.Epsilon, m.Steps, m.Updates
	return nil
}
