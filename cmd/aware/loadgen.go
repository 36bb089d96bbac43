package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/workloads/loadgen"
)

// newLoadgenCmd is `aware loadgen`: replay a trace against a workload server.
func newLoadgenCmd() *cobra.Command {
	var cfg loadgen.ReplayConfig
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "Replay a load trace against a workload server, open loop",
		Long: `Replays a load trace against --target, open loop: every request is sent at its
scheduled time whether or not earlier ones have completed, and latency is measured from
that time. The schedule is --duration of the trace from --window-start, scaled to a mean of
--rate requests per second, with Poisson arrivals within each step (seeded by --seed).
--trace is a trace file (per-second counts, Azure Functions or Azure LLM, gzip or not),
"synthetic" (a generated trace with daily cycles, noise and bursts), "constant" or
"poisson" (flat load). Prints a report; --json prints it as JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return loadgen.Replay(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Target, "target", "http://127.0.0.1:8080/invoke", "URL to send requests to")
	f.StringVar(&cfg.Trace, "trace", loadgen.TraceSynthetic, `trace file, or "synthetic", "constant", "poisson"`)
	f.Float64Var(&cfg.Rate, "rate", 100, "target mean rate in requests per second")
	f.DurationVar(&cfg.WindowStart, "window-start", 0, "offset of the replayed window in the trace")
	f.DurationVar(&cfg.Duration, "duration", time.Minute, "length of the replayed window, in trace time (0: to the end of a trace file)")
	f.Float64Var(&cfg.Speed, "speed", 1, "replay speed: 1 is real time, 2 twice as fast")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the arrivals (and of the synthetic trace)")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics of the generator on this address (e.g. 127.0.0.1:9101)")
	f.BoolVar(&cfg.JSON, "json", false, "print the report as JSON")
	f.IntVar(&cfg.MaxOutstanding, "max-outstanding", loadgen.DefaultMaxOutstanding, "requests in flight at most; arrivals beyond are dropped and counted")
	f.DurationVar(&cfg.Timeout, "timeout", loadgen.DefaultTimeout, "per-request timeout")
	cmd.AddCommand(newLoadgenBenchCmd())
	return cmd
}

func newLoadgenBenchCmd() *cobra.Command {
	var cfg loadgen.LocalBenchConfig
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark the load generator against a local workload server",
		Long: `Starts the workload server as a child process on loopback with the lightest
application available (one json2yaml segment of 250 bytes), then replays a flat schedule at
each --rates value for --duration and prints one line per rate: achieved rate, its error
against the target, latency and dispatch-lateness percentiles, drops, errors and whether
the achieved rate is within --tolerance. Server and generator share this machine's CPUs.
Fails when a rate up to --must-pass-up-to misses the tolerance.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return loadgen.BenchLocal(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&cfg.Rates, "rates", []int{250, 500, 1000, 2000, 3000, 4000}, "target rates in requests per second")
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "replay time per rate")
	f.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "unreported warm-up at the first rate")
	f.DurationVar(&cfg.Pause, "pause", time.Second, "idle time between rates")
	f.StringVar(&cfg.Arrivals, "arrivals", loadgen.TraceConstant, `arrival process: "constant" or "poisson"`)
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of Poisson arrivals")
	f.Float64Var(&cfg.Tolerance, "tolerance", 0.02, "largest acceptable relative error of the achieved rate")
	f.Float64Var(&cfg.MustPassUpTo, "must-pass-up-to", 2000, "fail if any rate up to this one misses the tolerance (0: never fail)")
	f.IntVar(&cfg.MaxOutstanding, "max-outstanding", loadgen.DefaultMaxOutstanding, "requests in flight at most")
	f.BoolVar(&cfg.JSON, "json", false, "print the results as JSON")
	f.StringVar(&cfg.ServerLog, "server-log", "", "write the server's log to this file (default: shown only if it fails)")
	return cmd
}
