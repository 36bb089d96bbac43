package metalearn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/evaluation/progress"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
)

// PaperMetaLR is the meta learner's learning rate on the base learner's
// gradient in the dissertation (Table A.1): TrainConfig.MetaLR for the
// paper's joint training, and the rate of meta learners that load a
// checkpoint and stay frozen.
var PaperMetaLR = meta.DefaultOptions(100).LR

// TrainConfig is a meta-training run (`aware meta train`).
type TrainConfig struct {
	// Lab is the world: the pool, the traces (synthetic shapes from
	// ShapeSeed where absent), the step, every agent's exploration noise
	// and the action mapping.
	Lab lab.Config
	// Apps are the first train-split applications of the pool trained on;
	// Rounds the rounds of one episode per application; M the
	// trajectories per bundle.
	Apps, Rounds, M int
	// Seed seeds the agent, the meta learner and the episodes.
	Seed uint64
	// Dir holds the checkpoints (train.MetaCheckpoint and the agent's),
	// rounds.jsonl, and resumes a run after its last finished round.
	Dir string
	// FixedStart starts every episode at the application's trace offset
	// instead of a point drawn from its seed.
	FixedStart bool
	// ContrastEvery is the episodes between steps of the identification
	// objective (0: off, the paper's training), Contrast the objective.
	ContrastEvery int
	Contrast      meta.ContrastConfig
	// MetaLR is the rate of the agent's critic loss back-propagated into
	// the meta learner (the paper's joint training; 0: off).
	MetaLR float64
	// HeldOut train-split applications after the Apps trained on validate
	// the run: after every round the agent plays two bundles of
	// HeldOutEpisodes greedy episodes on each and the meta learner's
	// identification of them is logged (0: off).
	HeldOut, HeldOutEpisodes int
	// Verbose prints every round.
	Verbose bool
	// Bar, when set, draws the progress of the run's episodes.
	Bar progress.Bar
}

// Validate refuses a run that cannot train.
func (c TrainConfig) Validate() error {
	if c.Apps < 1 || c.Rounds < 1 || c.M < 1 || c.ContrastEvery < 0 {
		return fmt.Errorf("--apps %d, --rounds %d and --m %d must be positive, --contrast-every %d not negative", c.Apps, c.Rounds, c.M, c.ContrastEvery)
	}
	if !(c.MetaLR >= 0) || math.IsInf(c.MetaLR, 0) {
		return fmt.Errorf("--meta-lr %v must be finite and not negative", c.MetaLR)
	}
	if c.MetaLR == 0 && c.ContrastEvery == 0 {
		return errors.New("--meta-lr 0 with --contrast-every 0 would leave the meta learner untrained")
	}
	if c.HeldOut < 0 || c.HeldOut == 1 || (c.HeldOut > 0 && c.HeldOutEpisodes < 1) {
		return fmt.Errorf("--validate %d (0, or at least 2 applications) and --validate-episodes %d (positive)", c.HeldOut, c.HeldOutEpisodes)
	}
	return nil
}

// Round is one line of rounds.jsonl.
type Round struct {
	Round         int     `json:"round"`
	MeanReward    float64 `json:"meanReward"`
	SLOViolations float64 `json:"sloViolationsPerEpisode"`
	CPUUtil       float64 `json:"cpuUtil"`
	MemoryUtil    float64 `json:"memoryUtil"`
	Seconds       float64 `json:"seconds"`
	// ContrastLoss is the identification objective's mean loss over the
	// round's steps (0 when off).
	ContrastLoss float64 `json:"contrastLoss,omitempty"`
	// With HeldOut: the share of held-out applications the meta learner
	// identifies after the round, an untrained one's on the same bundles,
	// and the seconds it took (not in Seconds).
	Validation          *float64 `json:"validationIdentification,omitempty"`
	ValidationUntrained *float64 `json:"validationUntrained,omitempty"`
	ValidationSeconds   float64  `json:"validationSeconds,omitempty"`
}

// RoundsFile is the file in TrainConfig.Dir that every round's figures
// are appended to.
const RoundsFile = "rounds.jsonl"

// Train runs (or resumes) c: DDPG and the meta learner trained together
// over c.Apps train-split applications for c.Rounds rounds, checkpointed
// in c.Dir after every round. It prints what it does to out.
func Train(ctx context.Context, c TrainConfig, out io.Writer) error {
	if err := c.Validate(); err != nil {
		return err
	}
	l, err := lab.New(c.Lab)
	if err != nil {
		return err
	}
	names := l.Split(generator.SplitTrain)
	if len(names) < c.Apps+c.HeldOut {
		err := fmt.Errorf("metalearn: apps %d: the pool of %d (seed %d) has %d %s-split applications", c.Apps+c.HeldOut, c.Lab.PoolSize, c.Lab.PoolSeed, len(names), generator.SplitTrain)
		if c.HeldOut > 0 {
			return fmt.Errorf("%w (--validate %d holds out applications after the --apps %d trained on)", err, c.HeldOut, c.Apps)
		}
		return err
	}
	cfg := meta.DefaultConfig(gym.StateDim + gym.ActDim + 1)
	ag, f, err := lab.NewMetaLearners(cfg, c.M, c.Seed, c.MetaLR, ddpg.WithGaussianNoise(c.Lab.Noise))
	if err != nil {
		return err
	}
	tasks, err := l.MetaTasks(names[:c.Apps], !c.FixedStart, f)
	if err != nil {
		return err
	}
	f.SetMetaUpdates(true)
	var val *validator
	if c.HeldOut > 0 {
		if val, err = newValidator(l, names[c.Apps:c.Apps+c.HeldOut], cfg, c); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(c.Dir, RoundsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()

	fmt.Fprintf(out, "meta-training DDPG and the meta learner (BiGRU %d×%d, embedding %d, bundles of %d) on %d train-split applications × %d rounds, seed %d, into %s\n",
		cfg.Layers, cfg.Hidden, cfg.Embed, c.M, len(tasks), c.Rounds, c.Seed, c.Dir)
	done, roundStart := 0, time.Now()
	var set func(int)
	end := func() {}
	var runErr error
	var contrastSum float64
	var contrastSteps int
	mcfg := train.MetaTrainConfig{Rounds: c.Rounds, Seed: c.Seed, Dir: c.Dir, Mapping: c.Lab.Mapping,
		Progress: func(r int, _ string, _ train.Episode) {
			if set == nil {
				set, end = c.Bar.Start("meta-train", (c.Rounds-r)*len(tasks))
			}
			done++
			set(done)
		},
		RoundDone: func(r int, eps []train.Episode) {
			s := train.Summarise(eps)
			line := Round{Round: r, MeanReward: s.Reward, SLOViolations: s.SLOViolations, CPUUtil: s.CPUUtil, MemoryUtil: s.MemoryUtil, Seconds: time.Since(roundStart).Seconds()}
			if contrastSteps > 0 {
				line.ContrastLoss = contrastSum / float64(contrastSteps)
			}
			if val != nil {
				began := time.Now()
				acc, untrained, err := val.identify(ctx, ag, f.Embedder())
				if err != nil && runErr == nil {
					runErr = fmt.Errorf("validation after round %d: %w", r, err)
				}
				line.Validation, line.ValidationUntrained, line.ValidationSeconds = &acc, &untrained, time.Since(began).Seconds()
			}
			roundStart, contrastSum, contrastSteps = time.Now(), 0, 0
			if js, err := json.Marshal(line); err == nil {
				if _, err := fmt.Fprintln(log, string(js)); err != nil && runErr == nil {
					runErr = err
				}
			}
			if c.Verbose {
				fmt.Fprintf(out, "round %d: mean episode reward %.2f, %.1f SLO violations per episode, CPU %.0f %%, memory %.0f %%, identification loss %.3f (%.0f s)\n",
					r, s.Reward, s.SLOViolations, 100*s.CPUUtil, 100*s.MemoryUtil, line.ContrastLoss, line.Seconds)
				if line.Validation != nil {
					fmt.Fprintf(out, "  held-out identification %.0f %% (untrained %.0f %%) of %d applications (%.0f s)\n",
						100**line.Validation, 100**line.ValidationUntrained, c.HeldOut, line.ValidationSeconds)
				}
			}
		}}
	if c.ContrastEvery > 0 {
		mcfg.Contrast = &train.ContrastSchedule{ContrastConfig: c.Contrast, Every: c.ContrastEvery,
			Done: func(loss float64) { contrastSum += loss; contrastSteps++ }}
	}
	start := time.Now()
	from, _, err := train.MetaTrain(ctx, tasks, ag, f, mcfg)
	end()
	if err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("%s: %w", RoundsFile, runErr)
	}
	if from >= c.Rounds {
		fmt.Fprintf(out, "%s already holds all %d rounds; nothing to do\n", c.Dir, c.Rounds)
		return nil
	}
	if from > 0 {
		fmt.Fprintf(out, "resumed after round %d\n", from)
	}
	wall := time.Since(start)
	eps := (c.Rounds - from) * len(tasks)
	fmt.Fprintf(out, "%d episodes in %s (%.2f s per episode); meta learner and agent in %s\n",
		eps, wall.Round(time.Second), wall.Seconds()/float64(eps), filepath.Join(c.Dir, train.MetaCheckpoint))
	return nil
}
