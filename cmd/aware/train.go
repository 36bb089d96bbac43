package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/train"
)

func newTrainCmd() *cobra.Command {
	var cfg train.TrainAppConfig
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
			cfg.Bar = bars(cmd.OutOrStdout())
			return train.TrainApp(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Algo, "algo", train.DDPG, "ddpg, ppo (the artifact's 7 discrete moves) or ppo-continuous")
	actionsFlag(f, &cfg.Mapping)
	f.StringVar(&cfg.App, "app", "app-0001", "application of the generated pool")
	f.Int64Var(&cfg.PoolSeed, "pool-seed", 1, "seed of the generated pool")
	f.IntVar(&cfg.Episodes, "episodes", 0, "episodes of 100 steps (0: the algorithm's default budget, ddpg 1000, ppo 1500)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the agent and the simulation")
	f.DurationVar(&cfg.Step, "step", 30*time.Second, "simulation step")
	tracesFlag(f, &cfg.Traces)
	f.StringVar(&cfg.Out, "out", "out/train", "output folder")
	f.StringVar(&cfg.Plot, "plot", "curve.png", "learning-curve file name in the output folder (.png, .svg or .pdf)")
	f.BoolVar(&cfg.Verbose, "verbose", false, "print every episode instead of a progress bar")
	return cmd
}
