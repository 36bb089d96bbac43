package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/workloads/demo"
	"github.com/aware-autoscaler/aware/workloads/loadgen"
	"github.com/aware-autoscaler/aware/workloads/services"
)

// newDemoCmd is `aware workload demo`: the real workloads end to end.
func newDemoCmd() *cobra.Command {
	var cfg demo.Config
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Real workloads end to end: quick calibration and a short trace replay against a served app",
		Long: `The main job on the embedded default. It starts a loopback S3 server (versitygw) and
PostgreSQL, measures every segment once quickly and compares the costs with the committed
profile (workloads/calibration/profile.json), then serves an example application and replays
a short window of a synthetic trace (daily cycle, noise, bursts) against it, open loop, and
prints the load generator's report beside the server's own counters.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo.Run(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Services, "services", services.Local, "object store and database: local, env or none")
	f.StringVar(&cfg.App, "app", "mixed", "built-in example app (mixed, light) or an app spec file")
	f.StringVar(&cfg.Trace, "trace", loadgen.TraceSynthetic, `trace to replay: a file, or "synthetic", "constant", "poisson"`)
	f.Float64Var(&cfg.Rate, "rate", 30, "mean request rate of the replay (req/s)")
	f.DurationVar(&cfg.Duration, "duration", 45*time.Second, "replayed window, in trace time")
	f.Float64Var(&cfg.Speed, "speed", 1, "replay speed")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the inputs, the synthetic trace and the arrivals")
	f.BoolVar(&cfg.Calibrate, "calibrate", true, "run the quick calibration first")
	f.DurationVar(&cfg.MinDuration, "calibrate-min-duration", 100*time.Millisecond, "measuring time per segment and size")
	return cmd
}
