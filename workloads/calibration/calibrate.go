package calibration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Services prepares what the segments run in: an Env with a scratch folder
// and the seed, and the object store and database when they are used.
// childEnv is the environment with which a child process reaches the same
// services (empty if none); cleanup releases everything. The services
// package provides one per --services mode (services.Scratch).
type Services func(ctx context.Context, seed int64) (env segments.Env, childEnv []string, cleanup func(), err error)

// Config is one calibration of this machine (`aware workload calibrate`).
type Config struct {
	Options  Options
	Segments []string // segments to measure (default: all)
	Seed     int64    // of the segments' generated inputs
	Isolate  bool     // measure each target in a fresh child process
	Services Services // required
	Out      string   // write the profile here ("": do not write)
	Command  string   // the command line recorded in the profile
}

// Calibrate starts the services, measures every target (printing progress
// to progress), writes the profile's table to out and, with cfg.Out, saves
// the profile.
func Calibrate(ctx context.Context, cfg Config, out, progress io.Writer) error {
	if cfg.Services == nil {
		return errors.New("calibration: no services")
	}
	env, childEnv, cleanup, err := cfg.Services(ctx, cfg.Seed)
	if err != nil {
		return err
	}
	defer cleanup()
	targets, err := Targets(cfg.Segments, env)
	if err != nil {
		return err
	}
	opts := cfg.Options
	if opts.Services, err = MeterFromEnv(childEnv); err != nil {
		return err
	}
	measure := InProcess(env, opts)
	if cfg.Isolate {
		if measure, err = ChildMeasurer(childEnv, cfg.Seed, opts); err != nil {
			return err
		}
	}
	p, err := Run(ctx, targets, opts, measure, ProgressLine(progress))
	fmt.Fprintln(progress)
	if err != nil {
		return err
	}
	p.Command = cfg.Command
	if err := p.WriteTable(out); err != nil {
		return err
	}
	if cfg.Out != "" {
		if err := p.Save(cfg.Out); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s (%d entries)\n", cfg.Out, len(p.Entries))
	}
	return nil
}

// ProgressLine returns a Progress that rewrites one terminal line.
func ProgressLine(w io.Writer) Progress {
	start := time.Now()
	return func(done, total int, t Target) {
		fmt.Fprintf(w, "\rcalibrating [%3d/%3d] %-16s %8d  %s   ", done, total, t.Segment, t.Size, time.Since(start).Round(time.Second))
	}
}

// The child's --services modes (services.Env, services.None): the child
// reaches its parent's services through the environment, or has none.
const (
	childServicesEnv  = "env"
	childServicesNone = "none"
)

// ChildMeasurer measures each target in a child process running this
// binary's hidden `aware workload calibrate one` (MeasureChild), which
// prints the entry as JSON. The child reaches the parent's services through
// childEnv (none if empty).
func ChildMeasurer(childEnv []string, seed int64, opts Options) (Measurer, error) {
	services := childServicesNone
	if len(childEnv) > 0 {
		services = childServicesEnv
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	optJSON, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, t Target, first bool) (Entry, error) {
		cmd := exec.CommandContext(ctx, exe, "workload", "calibrate", "one",
			"--segment", t.Segment, "--size", strconv.Itoa(t.Size), "--first="+strconv.FormatBool(first),
			"--seed", strconv.FormatInt(seed, 10), "--services", services, "--options", string(optJSON))
		cmd.Env = append(os.Environ(), childEnv...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return Entry{}, fmt.Errorf("measuring process: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		var e Entry
		dec := json.NewDecoder(&stdout)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return Entry{}, fmt.Errorf("measuring process output: %w", err)
		}
		return e, nil
	}, nil
}

// ChildConfig is one target measured in a child process (the hidden
// `aware workload calibrate one` that ChildMeasurer runs).
type ChildConfig struct {
	Target Target
	First  bool   // also measure service times, I/O and memory
	Seed   int64  // of the generated inputs
	Meter  bool   // meter the services whose IDs the parent passed (EnvServicePIDs)
	Opts   string // Options as JSON (--options)
	// Services reaches the parent's services, or none.
	Services Services
}

// MeasureChild measures one target in this process and writes the entry to
// out as JSON.
func MeasureChild(ctx context.Context, cfg ChildConfig, out io.Writer) error {
	var opts Options
	dec := json.NewDecoder(strings.NewReader(cfg.Opts))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&opts); err != nil {
		return fmt.Errorf("--options: %w", err)
	}
	if cfg.Meter {
		meter, err := MeterFromEnv(nil)
		if err != nil {
			return err
		}
		opts.Services = meter
	}
	if cfg.Services == nil {
		return errors.New("calibration: no services")
	}
	env, _, cleanup, err := cfg.Services(ctx, cfg.Seed)
	if err != nil {
		return err
	}
	defer cleanup()
	e, err := MeasureOne(ctx, cfg.Target, env, opts, cfg.First)
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(e)
}
