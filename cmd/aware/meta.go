package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

func newMetaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "meta",
		Short: "Train the meta learner (AWARE's workload embedding) with an agent across the pool",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newMetaTrainCmd(), newMetaEvalCmd(), newMetaAdaptCmd())
	return cmd
}

// metaTrainFlags are the flags of `aware meta train`.
type metaTrainFlags struct {
	poolFlags
	apps, rounds, m int
	seed            uint64
	out             string
	quick, verbose  bool
	fixedStart      bool
	contrastEvery   int
	contrast        meta.ContrastConfig
	metaLR          float64
	noise           float64
	mapping         gym.Mapping
	// validate train-split applications after the --apps trained on are
	// held out: after every round the agent plays two bundles of
	// validateEpisodes greedy episodes on each and the meta learner's
	// identification of them is logged (0: off).
	validate, validateEpisodes int
}

// metaNoise is the exploration noise of the agents that meta-training and
// adaptation train: FIRM's σ = 0.2 of the action box's half-range moves a
// memory limit by about 300 MiB, and the meta-trained agent, which learns to
// keep memory near the working set, explored into OOM kills: its exploring
// reward fell from 97 to 64–75 over 6–7 rounds of `aware meta train --apps
// 200` and it then adapted to new applications worse than TL (49.6 against
// 95.4); with σ = 0.05 it rose from 102 to 110 and adapted on a par with TL
// (108.9 against 110.5), docs/agents.md.
const metaNoise = 0.05

// poolFlags choose the generated pool and the simulation that the meta and
// bootstrapping commands run on.
type poolFlags struct {
	poolSize int
	poolSeed int64
	step     time.Duration
	traces   string
}

func (p *poolFlags) register(f *pflag.FlagSet) {
	f.IntVar(&p.poolSize, "pool", 1000, "size of the generated pool the applications are taken from")
	f.Int64Var(&p.poolSeed, "pool-seed", 1, "seed of the generated pool")
	f.DurationVar(&p.step, "step", 30*time.Second, "simulation step")
	f.StringVar(&p.traces, "traces", "../shared/traces", "folder of the real traces (synthetic shapes when absent)")
}

// quickMeta is --quick: a run that finishes within minutes on 2 cores.
var quickMeta = metaTrainFlags{apps: 40, rounds: 6}

func newMetaTrainCmd() *cobra.Command {
	fl := metaTrainFlags{apps: 800, rounds: 20, m: 20, contrastEvery: 8, contrast: meta.DefaultContrast(), noise: metaNoise}
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train DDPG and the meta learner jointly on the pool's train-split applications",
		Long: `Trains a DDPG agent and the meta learner together (paper §3, dissertation FLASH): in each
round every application of the pool's train split runs one episode of 100 steps on the
calibrated simulator; before the episode the meta learner embeds the application's best
recent trajectories (a bundle of the top --m by episode reward from a buffer of 32) and the
agent acts on the AWARE state followed by that embedding. Each episode starts at a point of
the application's trace drawn from its seed (--fixed-start: always at the application's
offset), so that neither the agent nor the embedding learns one window of the day by heart.

The meta learner trains for identification: after every --contrast-every episodes,
--contrast-tasks applications each give two disjoint bundles of up to --contrast-views of
their buffered trajectories (from different windows of the day), and a symmetric InfoNCE
loss over the FLASH similarity (temperature --contrast-temperature) draws each bundle
towards its own application's other bundle and away from the others'. The paper's joint
training, the agent's critic loss back-propagated through the embedding into the meta
learner after every update (one backward pass per episode), is --meta-lr 3e-4 (the
dissertation's rate); it is off by default because it made the embedding identify held-out
applications worse, not better (docs/agents.md). --contrast-every 0 with --meta-lr 3e-4 is
the paper's training alone.

After each round the meta learner (with every application's trajectory buffer) and the
agent are checkpointed in --out; run the same command again to resume after the last
finished round. Each round's figures are appended to --out/rounds.jsonl.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fl.quick && !cmd.Flags().Changed("apps") {
				fl.apps = quickMeta.apps
			}
			if fl.quick && !cmd.Flags().Changed("rounds") {
				fl.rounds = quickMeta.rounds
			}
			return runMetaTrain(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), fl)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.apps, "apps", fl.apps, "train-split applications to train on, the first of the pool (800: all of a 1000-app pool's)")
	f.IntVar(&fl.rounds, "rounds", fl.rounds, "rounds of one episode per application")
	f.IntVar(&fl.m, "m", fl.m, "trajectories per bundle (the paper's 20)")
	fl.poolFlags.register(f)
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the agent, the meta learner and the episodes")
	f.StringVar(&fl.out, "out", "out/meta", "checkpoint and report folder")
	f.BoolVar(&fl.quick, "quick", false, fmt.Sprintf("a short run: %d applications, %d rounds (unless given)", quickMeta.apps, quickMeta.rounds))
	f.BoolVar(&fl.verbose, "verbose", false, "print every round instead of a progress bar")
	f.Float64Var(&fl.noise, "noise", fl.noise, "standard deviation of the agent's Gaussian exploration noise (FIRM's is 0.2)")
	actionsFlag(f, &fl.mapping)
	f.BoolVar(&fl.fixedStart, "fixed-start", false, "start every episode at the application's trace offset instead of a point drawn from its seed")
	f.IntVar(&fl.contrastEvery, "contrast-every", fl.contrastEvery, "episodes between steps of the identification objective (0: off, the paper's training)")
	f.IntVar(&fl.contrast.Tasks, "contrast-tasks", fl.contrast.Tasks, "applications per step of the identification objective")
	f.IntVar(&fl.contrast.Views, "contrast-views", fl.contrast.Views, "trajectories per bundle of the identification objective")
	f.Float64Var(&fl.contrast.Temperature, "contrast-temperature", fl.contrast.Temperature, "temperature of the identification objective's InfoNCE loss")
	f.Float64Var(&fl.contrast.LR, "contrast-lr", fl.contrast.LR, "learning rate of the identification objective")
	f.Float64Var(&fl.metaLR, "meta-lr", fl.metaLR, "learning rate of the agent's critic loss back-propagated into the meta learner, the paper's joint training (the dissertation's 3e-4; 0: off, the embedding learns from the identification objective alone)")
	f.IntVar(&fl.validate, "validate", 0, "train-split applications after the --apps trained on, held out: after every round the meta learner identifies them (nearest neighbour, as aware meta eval) and rounds.jsonl records it beside an untrained meta learner's (0: off)")
	f.IntVar(&fl.validateEpisodes, "validate-episodes", 4, "with --validate: greedy episodes per bundle")
	return cmd
}

// metaRound is one line of rounds.jsonl.
type metaRound struct {
	Round         int     `json:"round"`
	MeanReward    float64 `json:"meanReward"`
	SLOViolations float64 `json:"sloViolationsPerEpisode"`
	CPUUtil       float64 `json:"cpuUtil"`
	MemoryUtil    float64 `json:"memoryUtil"`
	Seconds       float64 `json:"seconds"`
	// ContrastLoss is the identification objective's mean loss over the
	// round's steps (0 when off).
	ContrastLoss float64 `json:"contrastLoss,omitempty"`
	// With --validate: the share of held-out applications the meta learner
	// identifies after the round, an untrained one's on the same bundles,
	// and the seconds it took (not in Seconds).
	Validation          *float64 `json:"validationIdentification,omitempty"`
	ValidationUntrained *float64 `json:"validationUntrained,omitempty"`
	ValidationSeconds   float64  `json:"validationSeconds,omitempty"`
}

func runMetaTrain(ctx context.Context, out, progress io.Writer, fl metaTrainFlags) error {
	if fl.apps < 1 || fl.rounds < 1 || fl.m < 1 || fl.contrastEvery < 0 {
		return fmt.Errorf("--apps %d, --rounds %d and --m %d must be positive, --contrast-every %d not negative", fl.apps, fl.rounds, fl.m, fl.contrastEvery)
	}
	if !(fl.metaLR >= 0) || math.IsInf(fl.metaLR, 0) {
		return fmt.Errorf("--meta-lr %v must be finite and not negative", fl.metaLR)
	}
	if fl.metaLR == 0 && fl.contrastEvery == 0 {
		return errors.New("--meta-lr 0 with --contrast-every 0 would leave the meta learner untrained")
	}
	if fl.validate < 0 || fl.validate == 1 || (fl.validate > 0 && fl.validateEpisodes < 1) {
		return fmt.Errorf("--validate %d (0, or at least 2 applications) and --validate-episodes %d (positive)", fl.validate, fl.validateEpisodes)
	}
	prof, apps, simApps, err := splitApps(generator.SplitTrain, fl.apps+fl.validate, fl.poolSize, fl.poolSeed, fl.traces, fl.step, fl.seed)
	if err != nil {
		if fl.validate > 0 {
			return fmt.Errorf("%w (--validate %d holds out applications after the --apps %d trained on)", err, fl.validate, fl.apps)
		}
		return err
	}
	apps, simApps, heldApps, heldSim := apps[:fl.apps], simApps[:fl.apps], apps[fl.apps:], simApps[fl.apps:]
	cfg := meta.DefaultConfig(gym.StateDim + gym.ActDim + 1)
	zero := make([]float64, cfg.Embed)
	tasks := make([]train.MetaTask, len(apps))
	for i, a := range simApps {
		opts := []sim.Option{sim.WithStep(fl.step)}
		if !fl.fixedStart {
			opts = append(opts, sim.WithRandomStart())
		}
		env, err := sim.NewEnv(prof, a, opts...)
		if err != nil {
			return fmt.Errorf("%s: %w", apps[i].Name(), err)
		}
		emb, err := gym.Embed(env, zero)
		if err != nil {
			return err
		}
		tasks[i] = train.MetaTask{Name: apps[i].Name(), Env: emb}
	}
	ag, f, err := lab.NewMetaLearners(cfg, fl.m, fl.seed, fl.metaLR, ddpg.WithGaussianNoise(fl.noise))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if err := f.Register(meta.Task{Name: t.Name, StateDim: gym.StateDim, ActionDim: gym.ActDim}); err != nil {
			return err
		}
	}
	f.SetMetaUpdates(true)
	var val *validator
	if fl.validate > 0 {
		if val, err = newValidator(prof, heldApps, heldSim, cfg, fl); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(fl.out, 0o755); err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(fl.out, "rounds.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()

	fmt.Fprintf(out, "meta-training DDPG and the meta learner (BiGRU %d×%d, embedding %d, bundles of %d) on %d train-split applications × %d rounds, seed %d, into %s\n",
		cfg.Layers, cfg.Hidden, cfg.Embed, fl.m, len(tasks), fl.rounds, fl.seed, fl.out)
	var b *bar
	done, roundStart := 0, time.Now()
	var runErr error
	var contrastSum float64
	var contrastSteps int
	mcfg := train.MetaTrainConfig{Rounds: fl.rounds, Seed: fl.seed, Dir: fl.out, Mapping: fl.mapping,
		Progress: func(r int, _ string, _ train.Episode) {
			if b == nil && !fl.verbose {
				b = newBar(progress, "meta-train", (fl.rounds-r)*len(tasks))
			}
			done++
			if b != nil {
				b.set(done)
			}
		},
		RoundDone: func(r int, eps []train.Episode) {
			s := train.Summarise(eps)
			line := metaRound{Round: r, MeanReward: s.Reward, SLOViolations: s.SLOViolations, CPUUtil: s.CPUUtil, MemoryUtil: s.MemoryUtil, Seconds: time.Since(roundStart).Seconds()}
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
			if fl.verbose {
				fmt.Fprintf(out, "round %d: mean episode reward %.2f, %.1f SLO violations per episode, CPU %.0f %%, memory %.0f %%, identification loss %.3f (%.0f s)\n",
					r, s.Reward, s.SLOViolations, 100*s.CPUUtil, 100*s.MemoryUtil, line.ContrastLoss, line.Seconds)
				if line.Validation != nil {
					fmt.Fprintf(out, "  held-out identification %.0f %% (untrained %.0f %%) of %d applications (%.0f s)\n",
						100**line.Validation, 100**line.ValidationUntrained, fl.validate, line.ValidationSeconds)
				}
			}
		}}
	if fl.contrastEvery > 0 {
		mcfg.Contrast = &train.ContrastSchedule{ContrastConfig: fl.contrast, Every: fl.contrastEvery,
			Done: func(loss float64) { contrastSum += loss; contrastSteps++ }}
	}
	start := time.Now()
	from, _, err := train.MetaTrain(ctx, tasks, ag, f, mcfg)
	if b != nil {
		b.done()
	}
	if err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("rounds.jsonl: %w", runErr)
	}
	if from >= fl.rounds {
		fmt.Fprintf(out, "%s already holds all %d rounds; nothing to do\n", fl.out, fl.rounds)
		return nil
	}
	if from > 0 {
		fmt.Fprintf(out, "resumed after round %d\n", from)
	}
	wall := time.Since(start)
	eps := (fl.rounds - from) * len(tasks)
	fmt.Fprintf(out, "%d episodes in %s (%.2f s per episode); meta learner and agent in %s\n",
		eps, wall.Round(time.Second), wall.Seconds()/float64(eps), filepath.Join(fl.out, train.MetaCheckpoint))
	return nil
}

// validator is `aware meta train --validate`: held-out train-split
// applications whose identification is measured after every round, as
// `aware meta eval` measures it on the test split (reference and query
// bundles of greedy episodes at seed-drawn points of the day, with a zero
// embedding), with a copy of the meta learner's weights so that the
// training run is the same with or without it.
type validator struct {
	envs            []*gym.Embedded
	names           []string
	episodes        int
	seed            uint64
	copy, untrained *meta.Embedder
	zero            []float64
	mapping         gym.Mapping
}

func newValidator(prof *calibration.Profile, apps []generator.App, simApps []sim.App, cfg meta.Config, fl metaTrainFlags) (*validator, error) {
	v := &validator{episodes: fl.validateEpisodes, seed: fl.seed + 0x5A11D, zero: make([]float64, cfg.Embed), mapping: fl.mapping}
	for i, a := range simApps {
		e, err := sim.NewEnv(prof, a, sim.WithStep(fl.step), sim.WithRandomStart())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", apps[i].Name(), err)
		}
		emb, err := gym.Embed(e, v.zero)
		if err != nil {
			return nil, err
		}
		v.envs, v.names = append(v.envs, emb), append(v.names, apps[i].Name())
	}
	var err error
	if v.copy, err = meta.NewEmbedder(cfg, rand.New(rand.NewPCG(v.seed, 1))); err != nil {
		return nil, err
	}
	if v.untrained, err = meta.NewEmbedder(cfg, rand.New(rand.NewPCG(fl.seed, 0x0E1))); err != nil {
		return nil, err
	}
	v.copy.SetTraining(false)
	v.untrained.SetTraining(false)
	return v, nil
}

// identify returns the share of held-out applications identified with the
// weights of e and with the untrained meta learner.
func (v *validator) identify(ctx context.Context, ag agent.Agent, e *meta.Embedder) (trained, untrained float64, err error) {
	src := e.Params()
	for i, p := range v.copy.Params() {
		if err := p.CopyFrom(src[i]); err != nil {
			return 0, 0, err
		}
	}
	id := newIdentification(len(v.envs), ag, v.mapping, v.zero, v.episodes, v.seed, v.copy, v.untrained)
	for i, env := range v.envs {
		if err := id.play(ctx, i, env, env); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", v.names[i], err)
		}
	}
	trained, _, untrained, err = id.result()
	return trained, untrained, err
}

// paperMetaLR is the meta learner's learning rate on the base learner's
// gradient in the dissertation (Table A.1), for meta learners that load a
// checkpoint and stay frozen.
var paperMetaLR = meta.DefaultOptions(100).LR

// splitApps is the profile and the first n applications (n ≤ 0: all) of
// split in the generated pool of size poolSize and seed poolSeed, with their
// simulator forms (load shapes from traces).
func splitApps(split string, n, poolSize int, poolSeed int64, traces string, step time.Duration, seed uint64) (*calibration.Profile, []generator.App, []sim.App, error) {
	prof, err := calibration.Default()
	if err != nil {
		return nil, nil, nil, err
	}
	all, err := generatePool(prof, poolSeed, poolSize)
	if err != nil {
		return nil, nil, nil, err
	}
	var apps []generator.App
	for _, a := range all {
		if a.Split == split && (n <= 0 || len(apps) < n) {
			apps = append(apps, a)
		}
	}
	if len(apps) < n {
		return nil, nil, nil, fmt.Errorf("--apps %d: the pool of %d (seed %d) has %d %s-split applications", n, poolSize, poolSeed, len(apps), split)
	}
	simApps, _, err := simulate(apps, traces, step, seed)
	return prof, apps, simApps, err
}
