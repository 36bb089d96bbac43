package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// newCalibrateCmd is the `aware workload calibrate` subcommand.
func newCalibrateCmd() *cobra.Command {
	var (
		opts     = calibration.DefaultOptions()
		out      string
		names    []string
		services string
		seed     int64
	)
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure every segment's cost at each payload size on this machine",
		Long: `Measures every segment at each payload size: CPU-seconds per request, service-time
mean and coefficient of variation, memory working set and bytes of I/O. Each target is
measured --repeats times (all targets, then all again) and the table shows how well the
repeats agree. With --out the profile is written atomically as versioned JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			dir, err := os.MkdirTemp("", "aware-calibrate-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			env := segments.Env{Dir: mkdir(dir, "scratch"), Seed: seed}
			stop, err := startServices(ctx, services, dir, &env)
			if err != nil {
				return err
			}
			defer stop()
			targets, err := calibration.Targets(names, env)
			if err != nil {
				return err
			}
			start := time.Now()
			p, err := calibration.Run(ctx, targets, env, opts, func(done, total int, t calibration.Target) {
				fmt.Fprintf(cmd.ErrOrStderr(), "\r[%3d/%3d] %-16s %8d  %s   ", done, total, t.Segment, t.Size, time.Since(start).Round(time.Second))
			})
			fmt.Fprintln(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			p.Command = "aware " + strings.Join(os.Args[1:], " ")
			if err := p.WriteTable(cmd.OutOrStdout()); err != nil {
				return err
			}
			if out != "" {
				if err := p.Save(out); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d entries, %s)\n", out, len(p.Entries), time.Since(start).Round(time.Second))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "out", "o", "", "write the profile to this file (e.g. workloads/calibration/profile.json)")
	f.StringSliceVar(&names, "segments", nil, "segments to measure (default: all)")
	f.StringVar(&services, "services", servicesLocal, "object store and database: local (start on loopback), env (AWARE_S3_*, AWARE_DATABASE_URL) or none (skip those segments)")
	f.Int64Var(&seed, "seed", 1, "seed of the segments' generated inputs")
	f.IntVar(&opts.Repeats, "repeats", opts.Repeats, "measure every target this many times")
	f.IntVar(&opts.Warmup, "warmup", opts.Warmup, "warm-up requests before measuring")
	f.IntVar(&opts.MinRequests, "min-requests", opts.MinRequests, "measure at least this many requests")
	f.DurationVar(&opts.MinDuration, "min-duration", opts.MinDuration, "measure for at least this long")
	f.IntVar(&opts.MaxRequests, "max-requests", opts.MaxRequests, "measure at most this many requests")
	f.IntVar(&opts.Rounds, "rounds", opts.Rounds, "split each measurement into rounds and take the median round's CPU")
	f.IntVar(&opts.Concurrency, "concurrency", opts.Concurrency, "simultaneous requests in the memory phase")
	return cmd
}
