package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// calibrateFlags are the flags of `aware workload calibrate`.
type calibrateFlags struct {
	opts     calibration.Options
	out      string
	names    []string
	services string
	seed     int64
	isolate  bool
}

// newCalibrateCmd is the `aware workload calibrate` subcommand.
func newCalibrateCmd() *cobra.Command {
	fl := calibrateFlags{opts: calibration.DefaultOptions()}
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
			ctx := cmd.Context()
			p, err := calibrate(ctx, cmd.ErrOrStderr(), fl)
			if err != nil {
				return err
			}
			p.Command = "aware " + strings.Join(os.Args[1:], " ")
			if err := p.WriteTable(cmd.OutOrStdout()); err != nil {
				return err
			}
			if fl.out != "" {
				if err := p.Save(fl.out); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d entries)\n", fl.out, len(p.Entries))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&fl.out, "out", "o", "", "write the profile to this file (e.g. workloads/calibration/profile.json)")
	f.StringSliceVar(&fl.names, "segments", nil, "segments to measure (default: all)")
	f.StringVar(&fl.services, "services", servicesLocal, "object store and database: local (start on loopback), env (AWARE_S3_*, AWARE_DATABASE_URL) or none (skip those segments)")
	f.Int64Var(&fl.seed, "seed", 1, "seed of the segments' generated inputs")
	f.BoolVar(&fl.isolate, "isolate", true, "measure each target in a fresh child process")
	addCalibrationFlags(f, &fl.opts)
	cmd.AddCommand(newCalibrateOneCmd())
	return cmd
}

func addCalibrationFlags(f interface {
	IntVar(*int, string, int, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}, opts *calibration.Options) {
	f.IntVar(&opts.Repeats, "repeats", opts.Repeats, "measure every target this many times")
	f.IntVar(&opts.Warmup, "warmup", opts.Warmup, "warm-up requests before measuring")
	f.IntVar(&opts.MinRequests, "min-requests", opts.MinRequests, "measure at least this many requests")
	f.DurationVar(&opts.MinDuration, "min-duration", opts.MinDuration, "measure for at least this long")
	f.IntVar(&opts.MaxRequests, "max-requests", opts.MaxRequests, "measure at most this many requests")
	f.IntVar(&opts.Rounds, "rounds", opts.Rounds, "split each measurement into rounds and take the median round's CPU")
	f.IntVar(&opts.Concurrency, "concurrency", opts.Concurrency, "simultaneous requests in the memory phase")
}

// calibrate starts the services and measures every target, printing progress.
func calibrate(ctx context.Context, progress io.Writer, fl calibrateFlags) (*calibration.Profile, error) {
	dir, err := os.MkdirTemp("", "aware-calibrate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	env := segments.Env{Dir: mkdir(dir, "scratch"), Seed: fl.seed}
	stop, childEnv, err := startServices(ctx, fl.services, dir, &env)
	if err != nil {
		return nil, err
	}
	defer stop()
	targets, err := calibration.Targets(fl.names, env)
	if err != nil {
		return nil, err
	}
	if fl.opts.Services, err = serviceMeter(childEnv); err != nil {
		return nil, err
	}
	measure := calibration.InProcess(env, fl.opts)
	if fl.isolate {
		if measure, err = childMeasurer(childEnv, fl.seed, fl.opts); err != nil {
			return nil, err
		}
	}
	p, err := calibration.Run(ctx, targets, fl.opts, measure, progressLine(progress))
	fmt.Fprintln(progress)
	return p, err
}

// progressLine returns a Progress that rewrites one terminal line.
func progressLine(w io.Writer) calibration.Progress {
	start := time.Now()
	return func(done, total int, t calibration.Target) {
		fmt.Fprintf(w, "\rcalibrating [%3d/%3d] %-16s %8d  %s   ", done, total, t.Segment, t.Size, time.Since(start).Round(time.Second))
	}
}

// childMeasurer measures each target in a child process running this
// binary's hidden `workload calibrate one`, which prints the entry as JSON.
// The child reaches the parent's services through childEnv (none if empty).
func childMeasurer(childEnv []string, seed int64, opts calibration.Options) (calibration.Measurer, error) {
	services := servicesNone
	if len(childEnv) > 0 {
		services = servicesEnv
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	optJSON, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, t calibration.Target, first bool) (calibration.Entry, error) {
		cmd := exec.CommandContext(ctx, exe, "workload", "calibrate", "one",
			"--segment", t.Segment, "--size", strconv.Itoa(t.Size), "--first="+strconv.FormatBool(first),
			"--seed", strconv.FormatInt(seed, 10), "--services", services, "--options", string(optJSON))
		cmd.Env = append(os.Environ(), childEnv...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return calibration.Entry{}, fmt.Errorf("measuring process: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		var e calibration.Entry
		dec := json.NewDecoder(&stdout)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return calibration.Entry{}, fmt.Errorf("measuring process output: %w", err)
		}
		return e, nil
	}, nil
}

// newCalibrateOneCmd is the hidden `aware workload calibrate one`: measure one
// target in this process and print the entry as JSON.
func newCalibrateOneCmd() *cobra.Command {
	var (
		t        calibration.Target
		first    bool
		seed     int64
		services string
		optJSON  string
	)
	cmd := &cobra.Command{
		Use:    "one",
		Short:  "Measure one segment at one size in this process and print the entry as JSON",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var opts calibration.Options
			dec := json.NewDecoder(strings.NewReader(optJSON))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&opts); err != nil {
				return fmt.Errorf("--options: %w", err)
			}
			if services == servicesEnv {
				meter, err := serviceMeter(nil)
				if err != nil {
					return err
				}
				opts.Services = meter
			}
			dir, err := os.MkdirTemp("", "aware-calibrate-one-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			env := segments.Env{Dir: mkdir(dir, "scratch"), Seed: seed}
			stop, _, err := startServices(ctx, services, dir, &env)
			if err != nil {
				return err
			}
			defer stop()
			e, err := calibration.MeasureOne(ctx, t, env, opts, first)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(e)
		},
	}
	f := cmd.Flags()
	f.StringVar(&t.Segment, "segment", "", "segment name")
	f.IntVar(&t.Size, "size", 0, "payload size")
	f.BoolVar(&first, "first", true, "also measure service times, I/O and memory")
	f.Int64Var(&seed, "seed", 1, "seed of the generated inputs")
	f.StringVar(&services, "services", servicesNone, "object store and database: env or none")
	f.StringVar(&optJSON, "options", "{}", "calibration options as JSON")
	return cmd
}
