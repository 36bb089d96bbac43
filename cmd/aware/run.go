package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aware-autoscaler/aware/evaluation/baselines"
)

// tuneFlags registers the per-app HPA target search's flags, shared by
// `aware run` and `aware generate`, on t.
func tuneFlags(f *pflag.FlagSet, t *baselines.Tuning) {
	def := baselines.DefaultTuning()
	f.DurationVar(&t.Window, "tune-window", def.Window, "calibration window of the per-app HPA target search: the load just before each app's evaluation start")
	f.DurationVar(&t.Warmup, "tune-warmup", def.Warmup, "start of the calibration window not counted (the autoscaler starts without history)")
	f.Float64Var(&t.MaxViolations, "tune-max-violations", def.MaxViolations, "largest fraction of calibration steps violating the SLO at which a target still meets it")
	f.BoolVar(&t.Off, "no-tune", false, "keep the profile's default CPU target (0.7) for every app instead of searching it")
}

// newRunCmd is `aware run`, the main job (`make run`).
func newRunCmd() *cobra.Command {
	var cfg baselines.JobConfig
	cmd := &cobra.Command{
		Use:   "run",
		Short: "The main job: generate the pool and run the baseline autoscalers on the simulator",
		Long: `The main job on the embedded default. It generates the application pool, builds the
calibrated simulator from the embedded profile, and runs each baseline autoscaler (static,
HPA, VPA, HPA+VPA) over every application for a day of trace, then prints a table per
baseline (mean reward, CPU and memory utilisation, SLO violations, OOM kills, drops,
replicas) and writes results.json and results.md, with the pool, to --out. Load shapes
come from --traces, or, where a file is absent, from the shipped copies (NASA, Azure LLM)
and the model fitted to the Twitter trace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Bar = bars(cmd.ErrOrStderr())
			return baselines.RunJob(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Apps, "apps", 1000, "applications to generate")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the pool and the simulation")
	f.DurationVar(&cfg.Duration, "duration", 24*time.Hour, "simulated time")
	f.DurationVar(&cfg.Step, "step", 30*time.Second, "simulation step")
	tracesFlag(f, &cfg.Traces)
	f.StringVar(&cfg.Out, "out", "out/run", "output folder for the pool and the results")
	f.StringSliceVar(&cfg.Baselines, "baselines", nil, `run only these baselines (default: static, hpa, vpa, hpa+vpa, "hpa+vpa (default target)")`)
	tuneFlags(f, &cfg.Tune)
	return cmd
}
