package generator

import (
	"fmt"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// EnvConfig selects applications of a generated pool to drive as simulated
// gym environments (`aware env serve`). Errors name the command's flags.
type EnvConfig struct {
	Apps     int           // the first Apps applications of the pool, unless Names is set
	Names    []string      // applications of the pool by name (app-0001, ...)
	PoolSeed int64         // seed of the pool
	Traces   string        // folder of the real traces (LoadShapes)
	Step     time.Duration // simulation step
	Episode  int           // steps per episode
	Seed     uint64        // of the synthetic load shapes
}

// indices are the pool indices (1-based) to serve.
func (c EnvConfig) indices() ([]int, error) {
	if len(c.Names) == 0 {
		if c.Apps < 1 {
			return nil, fmt.Errorf("--apps %d: must be at least 1", c.Apps)
		}
		idx := make([]int, c.Apps)
		for i := range idx {
			idx[i] = i + 1
		}
		return idx, nil
	}
	seen := map[int]bool{}
	var idx []int
	for _, n := range c.Names {
		i, err := AppIndex(n)
		if err != nil {
			return nil, fmt.Errorf("--app %w", err)
		}
		if seen[i] {
			return nil, fmt.Errorf("--app %s is given twice", n)
		}
		seen[i] = true
		idx = append(idx, i)
	}
	return idx, nil
}

// SimEnvs returns the selected applications of the pool, each simulated by
// the calibrated simulator with the committed profile, by name.
func SimEnvs(cfg EnvConfig) (map[string]gym.Env, error) {
	idx, err := cfg.indices()
	if err != nil {
		return nil, err
	}
	if cfg.Episode < 1 {
		return nil, fmt.Errorf("--episode %d: must be at least 1", cfg.Episode)
	}
	prof, err := calibration.Default()
	if err != nil {
		return nil, err
	}
	all, err := FirstApps(prof, cfg.PoolSeed, slices.Max(idx))
	if err != nil {
		return nil, err
	}
	simApps, _, err := Simulated(all, cfg.Traces, cfg.Step, cfg.Seed)
	if err != nil {
		return nil, err
	}
	envs := make(map[string]gym.Env, len(idx))
	for _, i := range idx {
		e, err := sim.NewEnv(prof, simApps[i-1], sim.WithStep(cfg.Step), sim.WithEpisode(cfg.Episode))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", all[i-1].Name(), err)
		}
		envs[all[i-1].Name()] = e
	}
	return envs, nil
}
