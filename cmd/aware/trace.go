package main

import (
	"encoding/json"
	"fmt"
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
	cmd.AddCommand(newTraceStatsCmd(), newTraceFitCmd())
	return cmd
}

// traceLoadFlags are the options shared by the trace subcommands.
type traceLoadFlags struct {
	format string
	step   time.Duration
}

func (f *traceLoadFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.format, "format", "", "trace format (counts, azure-functions-2019, azure-functions-2021, azure-llm); default: detect")
	cmd.Flags().DurationVar(&f.step, "bin-step", time.Second, "bin length for traces of individual requests (Azure Functions 2021, Azure LLM)")
}

func (f *traceLoadFlags) load(path string) (trace.Series, error) {
	opts := []trace.LoadOption{trace.WithBinStep(f.step)}
	if f.format != "" {
		format, err := trace.ParseFormat(f.format)
		if err != nil {
			return trace.Series{}, err
		}
		opts = append(opts, trace.WithFormat(format))
	}
	return trace.Load(path, opts...)
}

func newTraceStatsCmd() *cobra.Command {
	var lf traceLoadFlags
	cmd := &cobra.Command{
		Use:   "stats FILE...",
		Short: "Print each trace's statistics (mean, CV, lag-1 autocorrelation, peaks at 1 min and 1 h)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stats := make([]trace.Stats, 0, len(args))
			for _, path := range args {
				s, err := lf.load(path)
				if err != nil {
					return err
				}
				stats = append(stats, trace.Describe(s))
			}
			return trace.WriteStatsTable(cmd.OutOrStdout(), stats...)
		},
	}
	lf.register(cmd)
	return cmd
}

func newTraceFitCmd() *cobra.Command {
	var (
		lf   traceLoadFlags
		seed uint64
	)
	cmd := &cobra.Command{
		Use:   "fit FILE",
		Short: "Fit the synthetic load model to a trace; print real vs synthetic statistics and the parameters as JSON",
		Long: `Fits the synthetic load model (daily and weekly cycles, slow and fast log-normal AR(1)
noise, bursts, Poisson counts) to the trace, generates a synthetic trace of the same
step and span with --seed, prints both traces' statistics side by side and then the
fitted parameters as JSON.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			observed, err := lf.load(args[0])
			if err != nil {
				return err
			}
			p, err := trace.Fit(observed)
			if err != nil {
				return err
			}
			syn, err := trace.Generate(p, observed.Step, observed.Span(), seed)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := trace.WriteStatsTable(out, trace.Describe(observed), trace.Describe(syn)); err != nil {
				return err
			}
			js, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "\nfitted parameters:\n%s\n", js)
			return err
		},
	}
	lf.register(cmd)
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the synthetic trace")
	return cmd
}
