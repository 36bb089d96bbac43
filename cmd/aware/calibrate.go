package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/services"
)

// newCalibrateCmd is the `aware workload calibrate` subcommand.
func newCalibrateCmd() *cobra.Command {
	cfg := calibration.Config{Options: calibration.DefaultOptions()}
	var mode string
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure every segment's cost at each payload size on this machine",
		Long: `Measures every segment at each payload size: CPU-seconds per request, service-time
mean and coefficient of variation, memory working set and bytes of I/O. Each target is
measured --repeats times (all targets, then all again), each time in a fresh child process
(--isolate) so that no target inherits another's garbage-collector state, and the table
shows how well the repeats agree. With --out the profile is written atomically as
versioned JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Services = services.Scratch(mode, "aware-calibrate-")
			cfg.Command = "aware " + strings.Join(os.Args[1:], " ")
			return calibration.Calibrate(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfg.Out, "out", "o", "", "write the profile to this file (e.g. workloads/calibration/profile.json)")
	f.StringSliceVar(&cfg.Segments, "segments", nil, "segments to measure (default: all)")
	f.StringVar(&mode, "services", services.Local, "object store and database: local (start on loopback), env (AWARE_S3_*, AWARE_DATABASE_URL) or none (skip those segments)")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed of the segments' generated inputs")
	f.BoolVar(&cfg.Isolate, "isolate", true, "measure each target in a fresh child process")
	opts := &cfg.Options
	f.IntVar(&opts.Repeats, "repeats", opts.Repeats, "measure every target this many times")
	f.IntVar(&opts.Warmup, "warmup", opts.Warmup, "warm-up requests before measuring")
	f.IntVar(&opts.MinRequests, "min-requests", opts.MinRequests, "measure at least this many requests")
	f.DurationVar(&opts.MinDuration, "min-duration", opts.MinDuration, "measure for at least this long")
	f.IntVar(&opts.MaxRequests, "max-requests", opts.MaxRequests, "measure at most this many requests")
	f.IntVar(&opts.Rounds, "rounds", opts.Rounds, "split each measurement into rounds and take the median round's CPU")
	f.IntVar(&opts.Concurrency, "concurrency", opts.Concurrency, "simultaneous requests in the memory phase")
	cmd.AddCommand(newCalibrateOneCmd())
	return cmd
}

// newCalibrateOneCmd is the hidden `aware workload calibrate one`: measure one
// target in this process and print the entry as JSON.
func newCalibrateOneCmd() *cobra.Command {
	var (
		cfg  calibration.ChildConfig
		mode string
	)
	cmd := &cobra.Command{
		Use:    "one",
		Short:  "Measure one segment at one size in this process and print the entry as JSON",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Meter, cfg.Services = mode == services.Env, services.Scratch(mode, "aware-calibrate-one-")
			return calibration.MeasureChild(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Target.Segment, "segment", "", "segment name")
	f.IntVar(&cfg.Target.Size, "size", 0, "payload size")
	f.BoolVar(&cfg.First, "first", true, "also measure service times, I/O and memory")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed of the generated inputs")
	f.StringVar(&mode, "services", services.None, "object store and database: env or none")
	f.StringVar(&cfg.Opts, "options", "{}", "calibration options as JSON")
	return cmd
}
