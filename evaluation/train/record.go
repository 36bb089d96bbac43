package train

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/gym"
)

// Record runs rec as env's policy, as Recommend does, and also returns
// every step as an agent would have seen it, in the order taken: the
// state, the allocation rec set as the agent's [−1, 1] action under
// cfg.Mapping (gym.Mapping.Encode; beyond one step, clipped), the reward, the next state
// and whether the episode terminated. These are the records the OFFLINE
// stage trains an agent from (controller/bootstrap).
func Record(ctx context.Context, env gym.Env, rec recommender.Recommender, step time.Duration, cfg Config) ([]Episode, []agent.Transition, error) {
	if step <= 0 {
		return nil, nil, fmt.Errorf("train: step %s must be positive", step)
	}
	space := env.ActionSpace()
	if space.Dim() != gym.ActDim {
		return nil, nil, fmt.Errorf("train: action space has %d dimensions, want %d", space.Dim(), gym.ActDim)
	}
	p := &recordingPolicy{recommenderPolicy: recommenderPolicy{rec: rec, step: step}, bounds: gym.BoundsOf(space), mapping: cfg.Mapping}
	eps, err := loop(ctx, env, p, cfg)
	return eps, p.records, err
}

// recordingPolicy is recommenderPolicy keeping each step as a transition.
type recordingPolicy struct {
	recommenderPolicy
	bounds  gym.Bounds
	mapping gym.Mapping
	act     []float64
	records []agent.Transition
}

func (p *recordingPolicy) choose(target, obs []float64, info gym.Info) bool {
	legal := p.recommenderPolicy.choose(target, obs, info)
	p.act = p.mapping.Encode(make([]float64, len(target)), target, info.Metrics.Allocation(), p.bounds)
	return legal
}

func (p *recordingPolicy) learn(obs []float64, r float64, next []float64, term bool) (int, error) {
	p.records = append(p.records, agent.Transition{State: slices.Clone(obs), Action: p.act, Reward: r, Next: slices.Clone(next), Done: term})
	return 0, nil
}
