package train

import (
	"context"
	"errors"
	"fmt"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/gym"
)

// Episode summarises one episode.
type Episode struct {
	Index int `json:"episode"`
	// Reward is the sum of step rewards (penalties included).
	Reward float64 `json:"reward"`
	Steps  int     `json:"steps"`
	// CPUUtil and MemoryUtil are means over the episode's steps.
	CPUUtil    float64 `json:"cpuUtil"`
	MemoryUtil float64 `json:"memoryUtil"`
	// SLOViolations counts steps with SP < 1; Illegal counts refused moves.
	SLOViolations int `json:"sloViolations"`
	Illegal       int `json:"illegal"`
	// Updates is the agent's update count at the end of the episode.
	Updates int `json:"updates"`
}

// Config is one training run.
type Config struct {
	Episodes int
	// Seed makes the environment's episodes reproducible (episode i is
	// reset with Seed+i).
	Seed uint64
	// Discrete says the agent emits one-hot gym.Move choices instead of
	// normalised continuous actions.
	Discrete bool
	// Explore is false to evaluate a policy without exploration or updates.
	Explore bool
	// MaxSteps bounds an episode that never truncates (default 100).
	MaxSteps int
	// Progress is called after each episode.
	Progress func(Episode)
}

// Run trains (or, with Explore false, evaluates) ag on env.
func Run(ctx context.Context, env gym.Env, ag agent.Agent, cfg Config) ([]Episode, error) {
	if cfg.Episodes < 1 {
		return nil, fmt.Errorf("train: episodes %d must be positive", cfg.Episodes)
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 100
	}
	space := env.ActionSpace()
	if space.Dim() != gym.ActDim {
		return nil, fmt.Errorf("train: action space has %d dimensions, want %d", space.Dim(), gym.ActDim)
	}
	bounds := gym.Bounds{
		MinReplicas: int(space.Low[gym.ActReplicas]), MaxReplicas: int(space.High[gym.ActReplicas]),
		MinCPU: space.Low[gym.ActCPU], MaxCPU: space.High[gym.ActCPU],
		MinMemory: space.Low[gym.ActMemory], MaxMemory: space.High[gym.ActMemory],
	}
	actDim := gym.ActDim
	if cfg.Discrete {
		actDim = int(gym.Moves)
	}
	act := make([]float64, actDim)
	target := make([]float64, gym.ActDim)
	out := make([]Episode, 0, cfg.Episodes)
	updates := 0
	for ep := range cfg.Episodes {
		obs, info, err := env.Reset(ctx, cfg.Seed+uint64(ep))
		if err != nil {
			return out, fmt.Errorf("train: episode %d: reset: %w", ep, err)
		}
		e := Episode{Index: ep}
		for step := 0; step < cfg.MaxSteps; step++ {
			ag.Act(act, obs, cfg.Explore)
			legal := true
			if cfg.Discrete {
				cur := gym.Allocation{Replicas: info.Metrics.Replicas, CPU: info.Metrics.CPULimit, Memory: info.Metrics.MemoryLimit}
				var next gym.Allocation
				next, legal = gym.Apply(gym.Move(argmax(act)), cur, bounds)
				next.Vector(target)
			} else {
				gym.Denormalize(target, act, space)
			}
			next, r, term, trunc, nextInfo, err := env.Step(ctx, target)
			if err != nil {
				return out, fmt.Errorf("train: episode %d step %d: %w", ep, step, err)
			}
			if !legal {
				r -= gym.IllegalPenalty
				e.Illegal++
			}
			done := term || trunc || step == cfg.MaxSteps-1
			if cfg.Explore {
				ag.Observe(agent.Transition{State: obs, Action: act, Reward: r, Next: next, Done: term})
				st, err := ag.Update()
				if err != nil {
					return out, fmt.Errorf("train: episode %d step %d: update: %w", ep, step, err)
				}
				updates = st.Updates
			}
			cu, mu := gym.Utilization(nextInfo.Metrics)
			e.Reward += r
			e.CPUUtil += cu
			e.MemoryUtil += mu
			if nextInfo.SLOViolated {
				e.SLOViolations++
			}
			e.Steps++
			obs, info = next, nextInfo
			if done {
				break
			}
		}
		if e.Steps == 0 {
			return out, errors.New("train: an episode had no steps")
		}
		e.CPUUtil /= float64(e.Steps)
		e.MemoryUtil /= float64(e.Steps)
		e.Updates = updates
		out = append(out, e)
		if cfg.Progress != nil {
			cfg.Progress(e)
		}
	}
	return out, nil
}

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
