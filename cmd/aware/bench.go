package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/evaluation/speed"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Print benchmark tables",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "rl",
		Short: "Time the RL library against the issue's targets and FIRM's published figures",
		Long: `Runs testing.Benchmark on DDPG's update (minibatch 64) and inference with FIRM's 40-40
networks, PPO's update, and the 2×256 bidirectional GRU over 20 trajectories × 100 steps, and
prints each time with its target and its speed-up over FIRM's published 73 ms and 1.2 ms.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(cmd.ErrOrStderr(), "timing the RL library, %s kernels (about a minute)…\n", rl.Kernels())
			rows, err := speed.Measure(speed.Cases())
			if err != nil {
				return err
			}
			return speed.WriteTable(out, rows)
		},
	})
	return cmd
}
