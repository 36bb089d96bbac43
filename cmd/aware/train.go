package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ppo"
	"github.com/aware-autoscaler/aware/evaluation/pool"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

type trainFlags struct {
	algo     string
	app      string
	poolSeed int64
	episodes int
	seed     uint64
	step     time.Duration
	traces   string
	out      string
}

func newTrainCmd() *cobra.Command {
	var fl trainFlags
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train one RL agent on one generated application in the simulator",
		Long: `Trains a DDPG or PPO agent on one application of the generated pool, simulated with the
calibrated simulator, for --episodes episodes of 100 steps (each episode replays the same
trace window from the application's offset). Writes episodes.json (per-episode reward, CPU
and memory utilisation, SLO violations, refused moves) and the agent's checkpoint to --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrain(cmd.Context(), cmd.OutOrStdout(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.algo, "algo", "ddpg", "ddpg, ppo (the artifact's 7 discrete moves) or ppo-continuous")
	f.StringVar(&fl.app, "app", "app-0001", "application of the generated pool")
	f.Int64Var(&fl.poolSeed, "pool-seed", 1, "seed of the generated pool")
	f.IntVar(&fl.episodes, "episodes", 50, "episodes of 100 steps")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the agent and the simulation")
	f.DurationVar(&fl.step, "step", 30*time.Second, "simulation step")
	f.StringVar(&fl.traces, "traces", "../shared/traces", "folder of the real traces (synthetic shapes when absent)")
	f.StringVar(&fl.out, "out", "out/train", "output folder")
	return cmd
}

func runTrain(ctx context.Context, out io.Writer, fl trainFlags) error {
	idx, err := strconv.Atoi(strings.TrimPrefix(fl.app, "app-"))
	if err != nil || idx < 1 || !strings.HasPrefix(fl.app, "app-") {
		return fmt.Errorf("--app %q: want a pool name like app-0001", fl.app)
	}
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	opts := generator.DefaultOptions()
	opts.Apps, opts.Seed = max(idx, 1), fl.poolSeed
	apps, err := generator.Generate(opts, prof)
	if err != nil {
		return err
	}
	shapes, err := pool.LoadShapes(fl.traces, fl.step, fl.seed)
	if err != nil {
		return err
	}
	simApps, err := pool.SimApps(apps[idx-1:idx], shapes)
	if err != nil {
		return err
	}
	env, err := sim.NewEnv(prof, simApps[0], sim.WithStep(fl.step))
	if err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(fl.seed, 0xA11CE))
	var (
		ag       agent.Agent
		discrete bool
	)
	switch fl.algo {
	case "ddpg":
		ag, err = ddpg.New(gym.StateDim, gym.ActDim, rnd)
	case "ppo":
		ag, err = ppo.NewDiscrete(gym.StateDim, int(gym.Moves), rnd)
		discrete = true
	case "ppo-continuous":
		ag, err = ppo.NewContinuous(gym.StateDim, gym.ActDim, rnd, ppo.WithInitLogStd(-1))
	default:
		return fmt.Errorf("--algo %q: want ddpg, ppo or ppo-continuous", fl.algo)
	}
	if err != nil {
		return err
	}
	if fl.episodes < 1 {
		return fmt.Errorf("--episodes %d: must be positive", fl.episodes)
	}
	fmt.Fprintf(out, "training %s on %s (%s, load %s) for %d episodes\n", fl.algo, fl.app, segments.FormatChain(apps[idx-1].Spec.Segments), shapes.Origin[apps[idx-1].Load.Source], fl.episodes)
	start := time.Now()
	eps, err := train.Run(ctx, env, ag, train.Config{Episodes: fl.episodes, Seed: fl.seed, Discrete: discrete, Explore: true,
		Progress: func(e train.Episode) {
			fmt.Fprintf(out, "episode %4d/%d  reward %7.2f  cpu %5.1f%%  mem %5.1f%%  slo violations %3d  refused %3d  updates %d\n",
				e.Index+1, fl.episodes, e.Reward, 100*e.CPUUtil, 100*e.MemoryUtil, e.SLOViolations, e.Illegal, e.Updates)
		}})
	if err != nil {
		return err
	}
	dir := filepath.Join(fl.out, fl.app+"-"+fl.algo)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(struct {
		App      string          `json:"app"`
		Algo     string          `json:"algo"`
		Seed     uint64          `json:"seed"`
		Episodes []train.Episode `json:"episodes"`
	}{fl.app, fl.algo, fl.seed, eps}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "episodes.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := ag.Save(filepath.Join(dir, "agent.ckpt")); err != nil {
		return err
	}
	fmt.Fprintf(out, "done in %s; wrote %s and %s\n", time.Since(start).Round(time.Millisecond), filepath.Join(dir, "episodes.json"), filepath.Join(dir, "agent.ckpt"))
	return nil
}
