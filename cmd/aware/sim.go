package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/validation"
)

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "The calibrated cluster simulator",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSimValidateCmd())
	return cmd
}

func newSimValidateCmd() *cobra.Command {
	var (
		cfg         validation.Config
		recalibrate bool
	)
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Run generated applications for real and on the simulator, and compare CPU, throughput, p95 latency and memory",
		Long: `Runs each application as a workload server child process limited to each CPU limit
(GOMAXPROCS = ceil(limit) and a cgroup CPU quota where the machine allows) with the generated
app's request concurrency (--concurrency; unbounded for --app files), replays a window of a
real trace (../shared/traces; a synthetic day without it) with the load generator on
loopback, simulates the same application, allocation, concurrency and per-second load, and
prints the table and the median absolute percentage errors against the targets (CPU ≤ 15 %,
throughput ≤ 5 %, p95 latency ≤ 30 %, memory ≤ 20 %). Real memory is the server process's
resident set (VmRSS) averaged over the window; simulated memory the pod's working set.

A profile describes the processor it was measured on (a segment's CPU cost differs by up to
2 × between processors), so by default the segments of the validated chains are re-measured
here first (--recalibrate) and the simulator uses those figures: what is validated is the
model, given a calibration of the machine it runs on. The workload server runs on CPUs of its
own (--pin), away from the load generator and the services. A real run's p95 over a 30 s
window moves by about 20 % between runs of the same case on a shared machine; --repeats N
compares the simulator with the median of N runs and states that spread.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// In --simulate-only mode the segments are re-measured only when asked.
			cfg.Recalibrate = recalibrate && (!cfg.SimulateOnly || cmd.Flags().Changed("recalibrate"))
			return validation.Run(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&cfg.Apps, "app", nil, "application spec files to validate (default: the first --n of the generated pool)")
	f.IntVar(&cfg.N, "n", 8, "how many generated applications to validate")
	f.Int64Var(&cfg.PoolSeed, "pool-seed", 1, "seed of the generated pool")
	f.Float64SliceVar(&cfg.CPUs, "cpus", []float64{0.5, 1}, "CPU limits (cores) to run each application at")
	f.Float64SliceVar(&cfg.Utilisations, "utilisations", []float64{0.6, 0.4}, "planned CPU utilisation for each CPU limit")
	f.DurationVar(&cfg.Window, "window", 30*time.Second, "length of each replayed trace window")
	f.DurationVar(&cfg.Warmup, "warmup", 3*time.Second, "constant load before each measured window")
	f.Float64Var(&cfg.MaxRate, "max-rate", 1500, "cap on a window's mean rate, req/s")
	f.StringVar(&cfg.Traces, "traces", "../shared/traces", "folder of the real traces (synthetic load when absent)")
	f.StringVar(&cfg.Services, "services", "local", "object store and database: local (start them), env (AWARE_S3_*, AWARE_DATABASE_URL) or none (skip applications that need them)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed for windows and arrivals")
	f.StringVar(&cfg.Out, "out", "", "also write validation.md and validation.json into this folder")
	f.BoolVar(&cfg.SimulateOnly, "simulate-only", false, "print the simulated side only (no servers)")
	f.StringVar(&cfg.Profile, "profile", "", "calibration profile to simulate with (default: the committed one)")
	f.BoolVar(&recalibrate, "recalibrate", true, "re-measure the validated chains' segments on this machine first (aware workload calibrate one) and simulate with those figures")
	f.IntVar(&cfg.Repeats, "repeats", 1, "run each real case this many times and compare the simulator with the median (the table then states the real p95's spread between repeats)")
	f.Float64Var(&cfg.ServiceCores, "service-cores", -1, "CPU cores the simulated database and object store have, shared with the load generator; 0 leaves them unlimited (each request costs its calibrated round trip); default: the CPUs the placement leaves them (all but the server's when not pinned)")
	f.BoolVar(&cfg.Overheads, "overheads", true, "with --recalibrate, also measure the HTTP overheads here (matMul 25 at 100 req/s on one core, 10 s, three times) and simulate with them")
	f.DurationVar(&cfg.OverheadCPU, "overhead-cpu", 0, "simulate with this HTTP CPU cost per request instead of the measured (or recorded, with --replay) one")
	f.DurationVar(&cfg.OverheadTime, "overhead-time", 0, "simulate with this off-CPU HTTP time per request instead of the measured (or recorded) one")
	f.StringVar(&cfg.Replay, "replay", "", "re-simulate the cases of an earlier run's --out folder (its validation.json, and its profile.json unless --profile) and compare them with the real figures recorded there, without running anything for real")
	f.BoolVar(&cfg.Pin, "pin", true, "run the workload server on CPUs of its own and the load generator and services on the others (cgroup cpuset), as pods and their clients run on different nodes")
	return cmd
}
