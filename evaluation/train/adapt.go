package train

import (
	"context"
	"fmt"
	"math"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/gym"
)

// ConvergenceRule says when an adaptation has converged: at the first
// episode from which on the trailing Window episodes' mean reward stays
// within Tolerance (relative) of a reference reward, the converged
// policy's (a method that reaches it and falls away again has not
// converged there).
type ConvergenceRule struct {
	Window    int
	Tolerance float64
}

// DefaultConvergence is the example rule: the mean of the last 10
// episodes within 2 % of the converged policy's.
func DefaultConvergence() ConvergenceRule { return ConvergenceRule{Window: 10, Tolerance: 0.02} }

func (c ConvergenceRule) validate(n int) error {
	if c.Window < 1 || !(c.Tolerance >= 0) {
		return fmt.Errorf("train: convergence rule: window %d must be positive and tolerance %v not negative", c.Window, c.Tolerance)
	}
	if n < c.Window {
		return fmt.Errorf("train: convergence rule: %d episodes are fewer than its window of %d", n, c.Window)
	}
	return nil
}

// Final is the mean reward of the last Window episodes: what an adaptation
// ended at.
func (c ConvergenceRule) Final(rewards []float64) (float64, error) {
	if err := c.validate(len(rewards)); err != nil {
		return 0, err
	}
	return mean(rewards[len(rewards)-c.Window:]), nil
}

// Episodes returns the number of episodes after which rewards had
// converged to ref (the trailing window's mean at least ref − Tolerance·|ref|
// there and at every later episode), and false with len(rewards) when
// they never did.
func (c ConvergenceRule) Episodes(rewards []float64, ref float64) (int, bool, error) {
	if err := c.validate(len(rewards)); err != nil {
		return 0, false, err
	}
	if math.IsNaN(ref) {
		return 0, false, fmt.Errorf("train: convergence rule: reference reward is NaN")
	}
	target := ref - c.Tolerance*math.Abs(ref)
	sum, from := 0.0, -1 // from: the first episode of the current run within the target
	for i, r := range rewards {
		sum += r
		if i >= c.Window {
			sum -= rewards[i-c.Window]
		}
		if i+1 < c.Window {
			continue
		}
		switch within := sum/float64(c.Window) >= target; {
		case within && from < 0:
			from = i
		case !within:
			from = -1
		}
	}
	if from < 0 {
		return len(rewards), false, nil
	}
	return from + 1, true, nil
}

// Plateau is the episodes after which rewards reached their own plateau:
// the first episode from which on the trailing Window episodes' mean stays
// within Tolerance (relative) of the mean of the Window episodes before
// them, whatever level that is (the dissertation's rule: a method's own
// convergence, not its distance from another's). It is false with
// len(rewards) when the last window still moved by more, and needs two
// windows of episodes.
func (c ConvergenceRule) Plateau(rewards []float64) (int, bool, error) {
	if err := c.validate(len(rewards)); err != nil {
		return 0, false, err
	}
	w := c.Window
	if len(rewards) < 2*w {
		return 0, false, fmt.Errorf("train: plateau rule: %d episodes are fewer than its two windows of %d", len(rewards), w)
	}
	from := -1 // the first episode of the current run on the plateau
	for i := 2*w - 1; i < len(rewards); i++ {
		now, before := mean(rewards[i-w+1:i+1]), mean(rewards[i-2*w+1:i-w+1])
		switch flat := math.Abs(now-before) <= c.Tolerance*math.Abs(before); {
		case flat && from < 0:
			from = i
		case !flat:
			from = -1
		}
	}
	if from < 0 {
		return len(rewards), false, nil
	}
	return from + 1, true, nil
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// AdaptConfig is one adaptation of a meta-trained agent to a new
// application.
type AdaptConfig struct {
	// Episodes is the budget; episode i is reset with Seed+i.
	Episodes int
	Seed     uint64
	// MaxSteps bounds an episode (default 100).
	MaxSteps int
	// Mapping is the one ag was meta-trained with.
	Mapping gym.Mapping
	// Progress is called after each episode.
	Progress func(Episode)
	// Fixed, when set, is the embedding every episode runs with instead
	// of the meta learner's (MetaConfig.Fixed: the ablations that keep
	// the meta-trained agent and take away what the embedding tells it).
	Fixed []float64
}

// Adapt is AWARE's adaptation to a new application (paper §3.2): the
// meta-trained agent ag keeps training on env (the plain AWARE state; the
// embedding is appended here) conditioned on the embedding that the frozen
// meta learner emb computes, before each episode, from the application's
// own best recent episodes (a FLASH of opts over emb, holding only this
// application). The first episode runs with a zero embedding. ag is
// trained in place; emb is not changed.
func Adapt(ctx context.Context, env gym.Env, name string, ag agent.EmbeddingLearner, emb *meta.Embedder, opts meta.Options, cfg AdaptConfig) ([]Episode, error) {
	f, err := meta.NewFLASH(emb, opts)
	if err != nil {
		return nil, err
	}
	if err := f.Register(meta.Task{Name: name, StateDim: gym.StateDim, ActionDim: gym.ActDim}); err != nil {
		return nil, err
	}
	e, err := gym.Embed(env, make([]float64, emb.Config().Embed))
	if err != nil {
		return nil, err
	}
	var progress func(string, Episode)
	if cfg.Progress != nil {
		progress = func(_ string, e Episode) { cfg.Progress(e) }
	}
	out, err := MetaRun(ctx, []MetaTask{{Name: name, Env: e}}, ag, f, MetaConfig{Rounds: cfg.Episodes, Seed: cfg.Seed, MaxSteps: cfg.MaxSteps, Mapping: cfg.Mapping, Progress: progress, Fixed: cfg.Fixed})
	if err != nil {
		return nil, err
	}
	return out[name], nil
}
