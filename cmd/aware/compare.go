package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/train"
)

func newCompareCmd() *cobra.Command {
	var cfg train.ComparePoolConfig
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Train agents on test-split applications and compare them with HPA+VPA",
		Long: `Trains every algorithm on each of the first --apps test-split applications of the generated
pool (in the simulator, episodes of 100 steps replaying the application's trace window), then
scores each greedy policy and HPA+VPA (warmed up on the same window first) over --scored
episodes with the same seeds. Prints the per-application table and the wins per algorithm,
and writes results.{json,md} and one learning-curve figure per algorithm to --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Bar = bars(cmd.ErrOrStderr())
			return train.ComparePool(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Apps, "apps", 10, "number of test-split applications, from the start of the pool")
	f.Int64Var(&cfg.PoolSeed, "pool-seed", 1, "seed of the generated pool")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the agents and the simulation")
	f.StringSliceVar(&cfg.Algos, "algos", train.Algos(), "algorithms to train")
	actionsFlag(f, &cfg.Mapping)
	f.StringToIntVar(&cfg.Episodes, "episodes", nil, "training episodes per algorithm, e.g. ddpg=1000,ppo=1500 (defaults: ddpg=1000, ppo=1500, ppo-continuous=1500)")
	f.IntVar(&cfg.Scored, "scored", 5, "scored episodes per policy")
	f.IntVar(&cfg.Workers, "workers", 2, "applications trained in parallel")
	f.DurationVar(&cfg.Step, "step", 30*time.Second, "simulation step")
	tracesFlag(f, &cfg.Traces)
	f.StringVar(&cfg.Out, "out", "out/compare", "output folder")
	return cmd
}
