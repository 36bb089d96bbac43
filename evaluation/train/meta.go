package train

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/gym"
)

// MetaTask is one application of a joint training run: its environment,
// whose observations end with the embedding (gym.Embed), under the name
// the meta learner knows it by.
type MetaTask struct {
	Name string
	Env  *gym.Embedded
}

// MetaConfig is a joint training run of an agent and the meta learner.
type MetaConfig struct {
	// Rounds of one episode per task, tasks in order; the embedding is
	// recomputed before each episode from the task's buffered trajectories
	// (the hidden state starts from zero at each switch of task).
	Rounds int
	// Seed makes the episodes reproducible (round r of task k is reset with
	// Seed + r·len(tasks) + k).
	Seed uint64
	// MaxSteps bounds an episode (default 100).
	MaxSteps int
	// Discrete says the agent emits one-hot gym.Move choices (PPO's
	// discrete head); the meta learner then sees those one-hot vectors as
	// the actions (register the tasks with ActionDim gym.Moves).
	Discrete bool
	// Mapping turns continuous actions into allocations (Config.Mapping).
	Mapping gym.Mapping
	// Progress is called after each episode.
	Progress func(task string, e Episode)
	// Contrast, when set, adds the meta learner's identification
	// objective while meta updates are on, its draws from Seed.
	Contrast *ContrastSchedule
	// Fixed, when set, is the embedding every episode runs with instead
	// of the meta learner's (an ablation: a zero embedding, or another
	// application's); the meta learner still buffers the episodes. Only
	// with meta updates off: the embedding has no gradient to take.
	Fixed []float64
}

// ContrastSchedule runs the meta learner's identification objective
// (meta.FLASH.Contrast) during joint training: one step of its
// ContrastConfig after every Every episodes; Done, when set, sees each
// step's loss.
type ContrastSchedule struct {
	meta.ContrastConfig
	Every int
	Done  func(loss float64)
}

// MetaRun trains ag and, when f's meta updates are on, the meta learner
// behind f together: before each episode of a task the task's embedding is
// computed and set on the environment and the agent; after each of the
// agent's updates the gradient of its loss with respect to the embedding
// goes back to the meta learner (f.AddGrad), which applies it when the
// next embedding is computed; each finished episode, its states without the
// embedding, its actions and its rewards, is inserted into the task's
// buffer. With updates off the meta learner is frozen and only embeds, as
// in adaptation to a new application. It returns each task's episodes.
func MetaRun(ctx context.Context, tasks []MetaTask, ag agent.EmbeddingLearner, f *meta.FLASH, cfg MetaConfig) (map[string][]Episode, error) {
	if len(tasks) == 0 || cfg.Rounds < 1 {
		return nil, fmt.Errorf("train: MetaRun: %d tasks and %d rounds must be positive", len(tasks), cfg.Rounds)
	}
	for _, t := range tasks {
		if d := t.Env.ActionSpace().Dim(); d != gym.ActDim {
			return nil, fmt.Errorf("train: MetaRun: task %s: action space has %d dimensions, want %d", t.Name, d, gym.ActDim)
		}
	}
	if c := cfg.Contrast; c != nil && c.Every < 1 {
		return nil, fmt.Errorf("train: MetaRun: the identification objective needs a step every n ≥ 1 episodes, not %d", c.Every)
	}
	if cfg.Fixed != nil {
		if f.MetaUpdates() {
			return nil, errors.New("train: MetaRun: a fixed embedding with meta updates on")
		}
		if d := f.Embedder().Config().Embed; len(cfg.Fixed) != d {
			return nil, fmt.Errorf("train: MetaRun: a fixed embedding of %d values for a meta learner embedding %d", len(cfg.Fixed), d)
		}
	}
	contrastRnd := rand.New(rand.NewPCG(cfg.Seed, 0xC0A7))
	out := map[string][]Episode{}
	var emb []float64
	for r := range cfg.Rounds {
		for k, t := range tasks {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			var err error
			if cfg.Fixed != nil {
				emb = append(emb[:0], cfg.Fixed...)
			} else if emb, err = f.Embedding(emb, t.Name); err != nil {
				return out, err
			}
			if err := t.Env.SetEmbedding(emb); err != nil {
				return out, fmt.Errorf("train: task %s: %w", t.Name, err)
			}
			if err := ag.SetEmbedding(k, emb); err != nil {
				return out, fmt.Errorf("train: task %s: %w", t.Name, err)
			}
			space := t.Env.ActionSpace()
			n := gym.ActDim
			if cfg.Discrete {
				n = int(gym.Moves)
			}
			p := &metaPolicy{
				agentPolicy: agentPolicy{ag: ag, bounds: gym.BoundsOf(space), discrete: cfg.Discrete, mapping: cfg.Mapping, explore: true, act: make([]float64, n), task: k},
				learner:     ag, f: f, name: t.Name, embDim: len(emb),
			}
			eps, err := loop(ctx, t.Env, p, Config{Episodes: 1, Seed: cfg.Seed + uint64(r*len(tasks)+k), Discrete: cfg.Discrete, Explore: true, MaxSteps: cfg.MaxSteps})
			if err != nil {
				return out, fmt.Errorf("train: task %s round %d: %w", t.Name, r, err)
			}
			if err := f.Insert(t.Name, p.states, p.actions, p.rewards); err != nil {
				return out, fmt.Errorf("train: task %s round %d: %w", t.Name, r, err)
			}
			eps[0].Index = r
			out[t.Name] = append(out[t.Name], eps[0])
			if cfg.Progress != nil {
				cfg.Progress(t.Name, eps[0])
			}
			if c := cfg.Contrast; c != nil && f.MetaUpdates() && (r*len(tasks)+k+1)%c.Every == 0 {
				loss, used, err := f.Contrast(contrastRnd, c.ContrastConfig)
				if err != nil {
					return out, fmt.Errorf("train: task %s round %d: %w", t.Name, r, err)
				}
				if used > 0 && c.Done != nil {
					c.Done(loss)
				}
			}
		}
	}
	return out, nil
}

// metaPolicy is agentPolicy that records the episode for the meta learner
// and hands the agent's embedding gradient to it after each update.
type metaPolicy struct {
	agentPolicy
	learner agent.EmbeddingLearner // agentPolicy's agent
	f       *meta.FLASH
	name    string // the task's name in f
	embDim  int
	states  [][]float64
	actions [][]float64
	rewards []float64
}

// closeWindow: a meta-training run's agent acts at every step (its
// transitions carry the embedding's gradient through learn), so it has no
// window to close.
func (p *metaPolicy) closeWindow() (int, error) { return -1, nil }

func (p *metaPolicy) learn(obs []float64, r float64, next []float64, term bool) (int, error) {
	n, err := p.agentPolicy.learn(obs, r, next, term)
	if err != nil {
		return n, err
	}
	p.states = append(p.states, slices.Clone(obs[:len(obs)-p.embDim]))
	p.actions = append(p.actions, slices.Clone(p.act))
	p.rewards = append(p.rewards, r)
	if p.updated && p.f.MetaUpdates() {
		g := p.learner.EmbeddingGrad()
		if g == nil {
			return n, errors.New("train: the agent updated but has no embedding gradient")
		}
		if err := p.f.AddGrad(p.name, g); err != nil {
			return n, err
		}
	}
	return n, nil
}
