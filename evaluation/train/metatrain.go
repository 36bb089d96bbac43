package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/gym"
)

// MetaTrainConfig is a resumable joint training run of an agent and the
// meta learner over many applications (MetaRun, one round at a time).
type MetaTrainConfig struct {
	// Rounds of one episode per task.
	Rounds int
	// Seed makes the episodes reproducible, as in MetaConfig: round r of
	// task k is reset with Seed + r·len(tasks) + k whether or not the run
	// was resumed in between.
	Seed uint64
	// MaxSteps bounds an episode (default 100).
	MaxSteps int
	// Discrete is MetaConfig.Discrete.
	Discrete bool
	// Mapping is MetaConfig.Mapping; a run is resumed only with the one it
	// was started with, and LoadMetaTrain reports it.
	Mapping gym.Mapping
	// Contrast is MetaConfig.Contrast.
	Contrast *ContrastSchedule
	// Fixed is MetaConfig.Fixed: with a zero embedding and the meta
	// learner's updates off, the run trains one agent over the tasks with
	// nothing to tell them apart (multi-task DDPG, the ablation without an
	// embedding).
	Fixed []float64
	// Dir, when set, holds the checkpoint written after every round:
	// meta.ckpt (the meta learner, every task's trajectory buffer and the
	// run's progress) and the agent's weights it names. A run started on a
	// Dir with a checkpoint of the same tasks and seed resumes after its
	// last round; one of another run is refused.
	Dir string
	// Progress is called after each episode, RoundDone after each round
	// (and its checkpoint) with the round's episodes in task order.
	Progress  func(round int, task string, e Episode)
	RoundDone func(round int, eps []Episode)
}

// metaTrainState is the run's progress kept in the meta checkpoint.
type metaTrainState struct {
	Rounds int      `json:"rounds"` // rounds done
	Seed   uint64   `json:"seed"`
	Tasks  []string `json:"tasks"`
	Agent  string   `json:"agent"` // the agent's checkpoint file in Dir
	// Actions is the gym.Mapping's name; empty in runs from before the
	// mapping was recorded, which mapped absolutely.
	Actions string `json:"actions,omitempty"`
}

// mapping is the run's gym.Mapping.
func (st metaTrainState) mapping() (gym.Mapping, error) {
	if st.Actions == "" {
		return gym.Absolute, nil
	}
	return gym.ParseMapping(st.Actions)
}

// MetaCheckpoint is the meta learner's file in a MetaTrainConfig.Dir.
const MetaCheckpoint = "meta.ckpt"

// MetaTrain runs cfg.Rounds rounds of MetaRun (resuming from cfg.Dir's
// checkpoint when it has one) and returns the round it started from and
// the episodes it ran, per task. The agent's replay memory is not part of
// a checkpoint: a resumed run continues from the last round's weights,
// optimiser state and meta learner with an empty memory.
func MetaTrain(ctx context.Context, tasks []MetaTask, ag agent.EmbeddingLearner, f *meta.FLASH, cfg MetaTrainConfig) (int, map[string][]Episode, error) {
	if cfg.Rounds < 1 || len(tasks) == 0 {
		return 0, nil, fmt.Errorf("train: MetaTrain: %d rounds and %d tasks must be positive", cfg.Rounds, len(tasks))
	}
	names := make([]string, len(tasks))
	for i, t := range tasks {
		names[i] = t.Name
	}
	start := 0
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return 0, nil, fmt.Errorf("train: MetaTrain: %w", err)
		}
		st, ok, err := resumeMeta(cfg.Dir, ag, f)
		if err != nil {
			return 0, nil, err
		}
		if ok {
			if st.Seed != cfg.Seed || !slices.Equal(st.Tasks, names) {
				return 0, nil, fmt.Errorf("train: MetaTrain: %s holds a run of seed %d over %d tasks (%s…), not seed %d over these %d: remove it or train into another folder",
					filepath.Join(cfg.Dir, MetaCheckpoint), st.Seed, len(st.Tasks), firstOf(st.Tasks), cfg.Seed, len(names))
			}
			if m, err := st.mapping(); err != nil || m != cfg.Mapping {
				return 0, nil, fmt.Errorf("train: MetaTrain: %s holds a run with %q actions, not %s: remove it or train into another folder",
					filepath.Join(cfg.Dir, MetaCheckpoint), st.Actions, cfg.Mapping)
			}
			start = st.Rounds
		}
	}
	out := map[string][]Episode{}
	for r := start; r < cfg.Rounds; r++ {
		var progress func(string, Episode)
		if cfg.Progress != nil {
			progress = func(task string, e Episode) { cfg.Progress(r, task, e) }
		}
		eps, err := MetaRun(ctx, tasks, ag, f, MetaConfig{Rounds: 1, Seed: cfg.Seed + uint64(r*len(tasks)), MaxSteps: cfg.MaxSteps, Discrete: cfg.Discrete, Mapping: cfg.Mapping, Progress: progress,
			Contrast: cfg.Contrast, Fixed: cfg.Fixed})
		if err != nil {
			return start, out, fmt.Errorf("round %d: %w", r, err)
		}
		round := make([]Episode, 0, len(tasks))
		for _, n := range names {
			e := eps[n][0]
			e.Index = r
			out[n] = append(out[n], e)
			round = append(round, e)
		}
		if cfg.Dir != "" {
			if err := saveMeta(cfg.Dir, ag, f, metaTrainState{Rounds: r + 1, Seed: cfg.Seed, Tasks: names, Actions: cfg.Mapping.String()}); err != nil {
				return start, out, fmt.Errorf("round %d: %w", r, err)
			}
		}
		if cfg.RoundDone != nil {
			cfg.RoundDone(r, round)
		}
	}
	return start, out, nil
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return s[0]
}

// saveMeta writes the agent's checkpoint for st.Rounds, then the meta
// checkpoint naming it (so that the pair on disk always belongs together),
// then removes the previous agent checkpoint.
func saveMeta(dir string, ag agent.Agent, f *meta.FLASH, st metaTrainState) error {
	st.Agent = fmt.Sprintf("agent-%06d.ckpt", st.Rounds)
	if err := ag.Save(filepath.Join(dir, st.Agent)); err != nil {
		return err
	}
	if err := f.Save(filepath.Join(dir, MetaCheckpoint), st); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "agent-*.ckpt"))
	for _, p := range old {
		if filepath.Base(p) != st.Agent {
			_ = os.Remove(p)
		}
	}
	return nil
}

// resumeMeta loads dir's checkpoint into ag and f, reporting false when
// there is none.
func resumeMeta(dir string, ag agent.Agent, f *meta.FLASH) (metaTrainState, bool, error) {
	var st metaTrainState
	path := filepath.Join(dir, MetaCheckpoint)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err := f.Load(path, &st); err != nil {
		return st, false, fmt.Errorf("train: resume from %s: %w", path, err)
	}
	if st.Agent == "" {
		return st, false, fmt.Errorf("train: resume from %s: it names no agent checkpoint", path)
	}
	if err := ag.Load(filepath.Join(dir, st.Agent)); err != nil {
		return st, false, fmt.Errorf("train: resume from %s: %w", path, err)
	}
	return st, true, nil
}

// LoadMetaTrain loads the checkpoint of a MetaTrain run in dir into ag and
// f (built as the run built them) and returns the rounds it had finished
// and the mapping its agent acted through.
func LoadMetaTrain(dir string, ag agent.Agent, f *meta.FLASH) (int, gym.Mapping, error) {
	st, ok, err := resumeMeta(dir, ag, f)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, fmt.Errorf("train: %s: no %s (run aware meta train first)", dir, MetaCheckpoint)
	}
	m, err := st.mapping()
	if err != nil {
		return 0, 0, fmt.Errorf("train: %s: %w", filepath.Join(dir, MetaCheckpoint), err)
	}
	return st.Rounds, m, nil
}
