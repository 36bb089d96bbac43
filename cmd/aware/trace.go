package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/workloads/trace"
)

// newTraceCmd is the `aware trace` command: inspect load traces and fit the
// synthetic trace model to them.
func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Describe load traces and fit the synthetic load model to them",
		Long: `Reads load traces (gzip'd or not, format detected from the content): per-second
count files, Azure Functions 2019 per-minute counts, Azure Functions 2021 invocations
and Azure LLM inference requests.`,
	}
	var stats, fit trace.Files
	var seed uint64
	statsCmd := &cobra.Command{
		Use:   "stats FILE...",
		Short: "Print each trace's statistics (mean, CV, lag-1 autocorrelation, peaks at 1 min and 1 h)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return trace.WriteStats(cmd.OutOrStdout(), stats, args...)
		},
	}
	fitCmd := &cobra.Command{
		Use:   "fit FILE",
		Short: "Fit the synthetic load model to a trace; print real vs synthetic statistics and the parameters as JSON",
		Long: `Fits the synthetic load model (daily and weekly cycles, slow and fast log-normal AR(1)
noise, bursts, Poisson counts) to the trace, generates a synthetic trace of the same
step and span with --seed, prints both traces' statistics side by side and then the
fitted parameters as JSON.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return trace.WriteFit(cmd.OutOrStdout(), fit, args[0], seed)
		},
	}
	for _, c := range []struct {
		cmd *cobra.Command
		f   *trace.Files
	}{{statsCmd, &stats}, {fitCmd, &fit}} {
		c.cmd.Flags().StringVar(&c.f.Format, "format", "", "trace format (counts, azure-functions-2019, azure-functions-2021, azure-llm); default: detect")
		c.cmd.Flags().DurationVar(&c.f.BinStep, "bin-step", time.Second, "bin length for traces of individual requests (Azure Functions 2021, Azure LLM)")
	}
	fitCmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the synthetic trace")
	cmd.AddCommand(statsCmd, fitCmd)
	return cmd
}
