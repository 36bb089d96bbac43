package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/evaluation/plot"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

type trainFlags struct {
	algo     string
	mapping  gym.Mapping
	app      string
	poolSeed int64
	episodes int
	seed     uint64
	step     time.Duration
	traces   string
	out      string
	plot     string
	verbose  bool
}

func newTrainCmd() *cobra.Command {
	var fl trainFlags
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train one RL agent on one generated application in the simulator",
		Long: `Trains a DDPG or PPO agent on one application of the generated pool, simulated with the
calibrated simulator, for --episodes episodes of 100 steps (each episode replays the same
trace window from the application's offset), then scores its greedy policy and HPA+VPA on
that window. Writes episodes.json (per-episode reward, CPU and memory utilisation, SLO
violations, refused moves, mean allocation), the learning curve (curve.png, or --plot) and
the agent's checkpoint to --out/<app>-<algo>.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrain(cmd.Context(), cmd.OutOrStdout(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.algo, "algo", train.DDPG, "ddpg, ppo (the artifact's 7 discrete moves) or ppo-continuous")
	actionsFlag(f, &fl.mapping)
	f.StringVar(&fl.app, "app", "app-0001", "application of the generated pool")
	f.Int64Var(&fl.poolSeed, "pool-seed", 1, "seed of the generated pool")
	f.IntVar(&fl.episodes, "episodes", 0, "episodes of 100 steps (0: the algorithm's default budget, ddpg 1000, ppo 1500)")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the agent and the simulation")
	f.DurationVar(&fl.step, "step", 30*time.Second, "simulation step")
	f.StringVar(&fl.traces, "traces", "../shared/traces", "folder of the real traces (synthetic shapes when absent)")
	f.StringVar(&fl.out, "out", "out/train", "output folder")
	f.StringVar(&fl.plot, "plot", "curve.png", "learning-curve file name in the output folder (.png, .svg or .pdf)")
	f.BoolVar(&fl.verbose, "verbose", false, "print every episode instead of a progress bar")
	return cmd
}

// generatePool generates the first n applications of the pool of seed
// poolSeed.
func generatePool(prof *calibration.Profile, poolSeed int64, n int) ([]generator.App, error) {
	opts := generator.DefaultOptions()
	opts.Apps, opts.Seed = n, poolSeed
	return generator.Generate(opts, prof)
}

// simulate returns apps in their simulator form, with load shapes from
// traces (synthetic when absent).
func simulate(apps []generator.App, traces string, step time.Duration, seed uint64) ([]sim.App, generator.Shapes, error) {
	shapes, err := generator.LoadShapes(traces, step, seed)
	if err != nil {
		return nil, generator.Shapes{}, err
	}
	simApps, err := generator.SimApps(apps, shapes)
	return simApps, shapes, err
}

// parseApp returns the index of the pool application called name: app-0001
// to app-1000 (generator.DefaultOptions().Apps) name the 1000-app pool.
func parseApp(name string) (int, error) {
	idx, err := strconv.Atoi(strings.TrimPrefix(name, "app-"))
	if err != nil || idx < 1 || !strings.HasPrefix(name, "app-") {
		return 0, fmt.Errorf("--app %q: want a pool name like app-0001", name)
	}
	if n := generator.DefaultOptions().Apps; idx > n {
		return 0, fmt.Errorf("--app %q: not in the pool, which holds app-0001 to app-%04d", name, n)
	}
	return idx, nil
}

func runTrain(ctx context.Context, out io.Writer, fl trainFlags) error {
	idx, err := parseApp(fl.app)
	if err != nil {
		return err
	}
	if _, err := train.FindAlgorithm(fl.algo); err != nil {
		return fmt.Errorf("--algo: %w", err)
	}
	if fl.episodes == 0 {
		fl.episodes = train.DefaultEpisodes(fl.algo)
	}
	if fl.episodes < 1 {
		return fmt.Errorf("--episodes %d: must be positive", fl.episodes)
	}
	if err := plot.CheckPath(fl.plot); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	all, err := generatePool(prof, fl.poolSeed, idx)
	if err != nil {
		return err
	}
	apps := all[idx-1:]
	simApps, shapes, err := simulate(apps, fl.traces, fl.step, fl.seed)
	if err != nil {
		return err
	}
	if err := tuneApps(ctx, prof, apps[:1], simApps[:1], fl.step, fl.seed); err != nil {
		return err
	}
	env, err := sim.NewEnv(prof, simApps[0], sim.WithStep(fl.step))
	if err != nil {
		return err
	}
	ag, discrete, err := train.NewAgent(fl.algo, gym.StateDim, fl.seed)
	if err != nil {
		return fmt.Errorf("--algo: %w", err)
	}
	app := apps[0]
	fmt.Fprintf(out, "training %s on %s (%s, SLO %s, load %s) for %d episodes\n", fl.algo, fl.app, segments.FormatChain(app.Spec.Segments), simApps[0].SLO, shapes.Origin[app.Load.Source], fl.episodes)
	start := time.Now()
	b := newBar(out, fl.algo, fl.episodes)
	eps, err := train.Run(ctx, env, ag, train.Config{Episodes: fl.episodes, Seed: fl.seed, Discrete: discrete, Mapping: fl.mapping, Explore: true,
		Progress: func(e train.Episode) {
			if fl.verbose {
				fmt.Fprintf(out, "episode %4d/%d  reward %7.2f  cpu %5.1f%%  mem %5.1f%%  slo violations %3d  refused %3d  updates %d\n",
					e.Index+1, fl.episodes, e.Reward, 100*e.CPUUtil, 100*e.MemoryUtil, e.SLOViolations, e.Illegal, e.Updates)
				return
			}
			b.set(e.Index + 1)
		}})
	if !fl.verbose {
		fmt.Fprintln(out)
	}
	if err != nil {
		return err
	}
	const scored = 5
	ev, err := train.Run(ctx, env, ag, train.Config{Episodes: scored, Seed: train.EvalSeed(fl.seed), Discrete: discrete, Mapping: fl.mapping})
	if err != nil {
		return err
	}
	hv, _ := baselines.Find("hpa+vpa")
	base, err := train.BaselineScore(ctx, env, hv, app.Profile.Targets.CPU, app.MinCPU, fl.step, fl.seed, scored)
	if err != nil {
		return err
	}
	agentScore := train.Summarise(ev)
	fmt.Fprintf(out, "greedy policy over %d episodes: reward %.1f, SLO violations %.1f, CPU %.0f%%, memory %.0f%% (HPA+VPA: %.1f, %.1f, %.0f%%, %.0f%%)\n",
		scored, agentScore.Reward, agentScore.SLOViolations, 100*agentScore.CPUUtil, 100*agentScore.MemoryUtil,
		base.Reward, base.SLOViolations, 100*base.CPUUtil, 100*base.MemoryUtil)

	dir := filepath.Join(fl.out, fl.app+"-"+fl.algo)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(struct {
		App      string          `json:"app"`
		Algo     string          `json:"algo"`
		Seed     uint64          `json:"seed"`
		Episodes []train.Episode `json:"episodes"`
		Greedy   train.Score     `json:"greedy"`
		Baseline train.Score     `json:"baseline"`
	}{fl.app, fl.algo, fl.seed, eps, agentScore, base}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "episodes.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	y := make([]float64, len(eps))
	for i, e := range eps {
		y[i] = e.Reward
	}
	if err := plot.Save(filepath.Join(dir, fl.plot), plot.Curves{
		Title:  fmt.Sprintf("%s on %s (seed %d)", fl.algo, fl.app, fl.seed),
		XLabel: "episode", YLabel: "episode reward", Smooth: 20,
		Series: []plot.Series{{Name: fl.algo + " (exploring)", Y: y}},
		References: []plot.Reference{
			{Name: "greedy policy", Y: agentScore.Reward},
			{Name: "HPA+VPA", Y: base.Reward},
		},
	}); err != nil {
		return err
	}
	if err := ag.Save(filepath.Join(dir, "agent.ckpt")); err != nil {
		return err
	}
	fmt.Fprintf(out, "done in %s; wrote episodes.json, %s and agent.ckpt to %s\n", time.Since(start).Round(time.Millisecond), fl.plot, dir)
	return nil
}
