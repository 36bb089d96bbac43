package bootstrap

import (
	"fmt"
	"slices"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// meta is the JSON metadata of a BCQ checkpoint.
type meta struct {
	Algo      string `json:"algo"`
	StateDim  int    `json:"stateDim"`
	ActionDim int    `json:"actionDim"`
	Latent    int    `json:"latent"`
	Hidden    []int  `json:"hidden"`
	VAEHidden []int  `json:"vaeHidden"`
	Steps     int    `json:"steps"`
	Updates   int    `json:"updates"`
}

// networks lists every network with its checkpoint name: the trained ones
// (in b.trained's order) and the targets.
func (b *BCQ) networks() []named {
	return append(slices.Clone(b.trained), named{"perturbation-target", b.xiT}, named{"critic1-target", b.q1T}, named{"critic2-target", b.q2T})
}

// Save writes every network (the VAE, the perturbation network, the twin
// critics and the targets), every optimiser's state and the step and
// update counts to path atomically. The replay buffer and the random
// source are not saved.
func (b *BCQ) Save(path string) error {
	c := rl.NewCheckpoint()
	for _, n := range b.networks() {
		c.PutParams(n.name, n.net.Params())
	}
	for i, n := range b.trained {
		c.PutAdam(n.name+"-adam", b.opt[i])
	}
	err := c.SetMeta(meta{Algo: "bcq", StateDim: b.stateDim, ActionDim: b.actionDim, Latent: b.latent,
		Hidden: b.cfg.Hidden, VAEHidden: b.cfg.VAEHidden, Steps: b.steps, Updates: b.updates})
	if err == nil {
		err = rl.WriteCheckpoint(path, c)
	}
	if err != nil {
		return fmt.Errorf("bootstrap: Save: %w", err)
	}
	return nil
}

// Load restores state written by Save of an agent of the same shape. On
// error the agent is unchanged.
func (b *BCQ) Load(path string) error {
	c, err := rl.ReadCheckpoint(path)
	if err != nil {
		return fmt.Errorf("bootstrap: Load: %w", err)
	}
	var m meta
	if err := c.Meta(&m); err != nil {
		return fmt.Errorf("bootstrap: Load %s: %w", path, err)
	}
	if m.Algo != "bcq" || m.StateDim != b.stateDim || m.ActionDim != b.actionDim || m.Latent != b.latent ||
		!slices.Equal(m.Hidden, b.cfg.Hidden) || !slices.Equal(m.VAEHidden, b.cfg.VAEHidden) {
		return fmt.Errorf("bootstrap: Load %s: checkpoint is %s state %d action %d latent %d hidden %v/%v, agent is bcq state %d action %d latent %d hidden %v/%v",
			path, m.Algo, m.StateDim, m.ActionDim, m.Latent, m.Hidden, m.VAEHidden, b.stateDim, b.actionDim, b.latent, b.cfg.Hidden, b.cfg.VAEHidden)
	}
	nets := b.networks()
	rs := make([]rl.Restore, len(nets))
	for i, n := range nets {
		rs[i] = rl.Restore{Name: n.name, Params: n.net.Params()}
		if i < len(b.trained) { // the trained networks lead nets
			rs[i].AdamName, rs[i].Adam = n.name+"-adam", b.opt[i]
		}
	}
	if err := c.Restore(rs...); err != nil {
		return fmt.Errorf("bootstrap: Load %s: %w", path, err)
	}
	b.steps, b.updates = m.Steps, m.Updates
	return nil
}
