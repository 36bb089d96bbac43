package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/validation"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
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

type validateFlags struct {
	apps         []string
	n            int
	poolSeed     int64
	cpus, utils  []float64
	window       time.Duration
	warmup       time.Duration
	maxRate      float64
	traces       string
	services     string
	seed         uint64
	out          string
	simulateOnly bool
	profile      string
	recalibrate  bool
	pin          bool
	repeats      int
	serviceCores float64
	replay       string
	overheads    bool
	overheadCPU  time.Duration // overrides when positive
	overheadTime time.Duration
}

func newSimValidateCmd() *cobra.Command {
	var fl validateFlags
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
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimValidate(cmd, fl) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&fl.apps, "app", nil, "application spec files to validate (default: the first --n of the generated pool)")
	f.IntVar(&fl.n, "n", 8, "how many generated applications to validate")
	f.Int64Var(&fl.poolSeed, "pool-seed", 1, "seed of the generated pool")
	f.Float64SliceVar(&fl.cpus, "cpus", []float64{0.5, 1}, "CPU limits (cores) to run each application at")
	f.Float64SliceVar(&fl.utils, "utilisations", []float64{0.6, 0.4}, "planned CPU utilisation for each CPU limit")
	f.DurationVar(&fl.window, "window", 30*time.Second, "length of each replayed trace window")
	f.DurationVar(&fl.warmup, "warmup", 3*time.Second, "constant load before each measured window")
	f.Float64Var(&fl.maxRate, "max-rate", 1500, "cap on a window's mean rate, req/s")
	f.StringVar(&fl.traces, "traces", "../shared/traces", "folder of the real traces (synthetic load when absent)")
	f.StringVar(&fl.services, "services", "local", "object store and database: local (start them), env (AWARE_S3_*, AWARE_DATABASE_URL) or none (skip applications that need them)")
	f.Uint64Var(&fl.seed, "seed", 1, "seed for windows and arrivals")
	f.StringVar(&fl.out, "out", "", "also write validation.md and validation.json into this folder")
	f.BoolVar(&fl.simulateOnly, "simulate-only", false, "print the simulated side only (no servers)")
	f.StringVar(&fl.profile, "profile", "", "calibration profile to simulate with (default: the committed one)")
	f.BoolVar(&fl.recalibrate, "recalibrate", true, "re-measure the validated chains' segments on this machine first (aware workload calibrate one) and simulate with those figures")
	f.IntVar(&fl.repeats, "repeats", 1, "run each real case this many times and compare the simulator with the median (the table then states the real p95's spread between repeats)")
	f.Float64Var(&fl.serviceCores, "service-cores", -1, "CPU cores the simulated database and object store have, shared with the load generator; 0 leaves them unlimited (each request costs its calibrated round trip); default: the CPUs the placement leaves them (all but the server's when not pinned)")
	f.BoolVar(&fl.overheads, "overheads", true, "with --recalibrate, also measure the HTTP overheads here (matMul 25 at 100 req/s on one core, 10 s, three times) and simulate with them")
	f.DurationVar(&fl.overheadCPU, "overhead-cpu", 0, "simulate with this HTTP CPU cost per request instead of the measured (or recorded, with --replay) one")
	f.DurationVar(&fl.overheadTime, "overhead-time", 0, "simulate with this off-CPU HTTP time per request instead of the measured (or recorded) one")
	f.StringVar(&fl.replay, "replay", "", "re-simulate the cases of an earlier run's --out folder (its validation.json, and its profile.json unless --profile) and compare them with the real figures recorded there, without running anything for real")
	f.BoolVar(&fl.pin, "pin", true, "run the workload server on CPUs of its own and the load generator and services on the others (cgroup cpuset), as pods and their clients run on different nodes")
	return cmd
}

func runSimValidate(cmd *cobra.Command, fl validateFlags) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	if fl.repeats < 1 {
		return fmt.Errorf("--repeats %d: must be at least 1", fl.repeats)
	}
	if fl.replay != "" {
		return replayValidation(cmd, fl)
	}
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	picks, err := validationPicks(fl, prof)
	if err != nil {
		return err
	}
	if fl.profile != "" {
		if prof, err = calibration.Load(fl.profile); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
	}
	sources, err := validation.LoadSources(fl.traces)
	if err != nil {
		return fmt.Errorf("--traces: %w", err)
	}
	if len(sources) == 0 {
		fmt.Fprintf(out, "no real traces in %s: replaying a synthetic day instead\n", fl.traces)
		src, err := validation.SyntheticSource(fl.seed)
		if err != nil {
			return err
		}
		sources = append(sources, src)
	}
	dir, err := os.MkdirTemp("", "aware-validate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var env segments.Env
	childEnv := []string(nil)
	// In --simulate-only mode the segments are re-measured only when asked.
	recal := fl.recalibrate && (!fl.simulateOnly || cmd.Flags().Changed("recalibrate"))
	maxCPU := 0.0
	for _, c := range fl.cpus {
		maxCPU = max(maxCPU, c)
	}
	var place *validation.Placement
	ov := sim.DefaultOverheads()
	if (!fl.simulateOnly || recal) && fl.pin {
		place = validation.Place(maxCPU, fmt.Sprintf("aware-validate-%d", os.Getpid()))
		defer func() {
			if err := place.Release(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "release the CPU placement: %v\n", err)
			}
		}()
		fmt.Fprintf(cmd.ErrOrStderr(), "placement: %s\n", place.Desc)
	}
	if !fl.simulateOnly || recal {
		needs := false
		for _, p := range picks {
			o, d := (app.Spec{Segments: p.Chain}).Needs()
			needs = needs || o || d
		}
		if needs && fl.services != "none" {
			stop, ce, err := startServices(ctx, fl.services, dir, &env)
			if err != nil {
				return err
			}
			defer stop()
			childEnv = ce
		}
		if fl.services == "none" {
			kept := picks[:0]
			for _, p := range picks {
				if o, d := (app.Spec{Segments: p.Chain}).Needs(); !o && !d {
					kept = append(kept, p)
				}
			}
			picks = kept
		}
		if recal {
			if prof, err = recalibrate(ctx, cmd.ErrOrStderr(), prof, picks, childEnv); err != nil {
				return err
			}
		}
		if recal && fl.overheads && !fl.simulateOnly {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o, m, err := validation.MeasureOverheads(ctx, validation.RealConfig{Exe: exe, Env: childEnv, Dir: dir, Warmup: fl.warmup, Seed: fl.seed, Placement: place}, prof, 100, 10*time.Second, 3)
			if err != nil {
				return err
			}
			ov = o
			fmt.Fprintf(cmd.ErrOrStderr(), "HTTP overheads measured here: %.0f µs CPU and %.0f µs off-CPU per request (median latency %.3f ms of matMul 25 at %.0f req/s; defaults %.0f and %.0f µs)\n",
				1e6*ov.CPU, 1e6*ov.Time, 1e3*m.P50, m.Throughput, 1e6*sim.DefaultOverheads().CPU, 1e6*sim.DefaultOverheads().Time)
		}
	}
	ov = fl.overridden(ov)
	svcCores := fl.serviceCores
	if svcCores < 0 {
		// What the services get in a real run: the CPUs besides the
		// server's when pinned, else all but the server's largest limit.
		svcCores = math.Max(float64(runtime.NumCPU())-maxCPU, 1)
		if n := place.RestCPUs(); n > 0 {
			svcCores = float64(n)
		}
	}
	if svcCores > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "simulated services: %.2f CPU cores, shared with the load generator at %.0f µs per request\n", svcCores, 1e6*validation.LoadGenCPU)
	}
	cases, err := validation.Cases(prof, picks, sources, validation.Plan{CPUs: fl.cpus, Utilisations: fl.utils, Window: fl.window, MaxRate: fl.maxRate, Seed: fl.seed})
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var rows []validation.Row
	for i, c := range cases {
		fmt.Fprintf(cmd.ErrOrStderr(), "[%d/%d] %s at %.2f cores\n", i+1, len(cases), c.App, c.CPU)
		row := validation.Row{Case: c, Method: validation.Method{Quota: "-", MemorySource: "-"}}
		if row.Sim, err = validation.Simulate(ctx, prof, c, append(validation.ServiceOptions(svcCores), sim.WithOverheads(ov))...); err != nil {
			return err
		}
		for rep := 0; !fl.simulateOnly && rep < fl.repeats; rep++ {
			if fl.repeats > 1 {
				fmt.Fprintf(cmd.ErrOrStderr(), "  repeat %d/%d\n", rep+1, fl.repeats)
			}
			m, method, err := validation.Real(ctx, validation.RealConfig{Exe: exe, Env: childEnv, Dir: dir, Warmup: fl.warmup, Seed: fl.seed, Placement: place}, c)
			if err != nil {
				return err
			}
			row.Method = method
			row.Repeats = append(row.Repeats, m)
		}
		if len(row.Repeats) > 0 {
			row.Real = validation.MedianOf(row.Repeats)
		}
		if len(row.Repeats) < 2 {
			row.Repeats = nil
		}
		rows = append(rows, row)
	}
	return writeValidation(cmd, fl, prof, rows, svcCores, ov)
}

// validationFile is validation.json: the rows, their summary and the
// cores the simulated services had (0: unlimited), so that --replay
// re-simulates what was compared.
type validationFile struct {
	Rows         []validation.Row    `json:"rows"`
	Summary      validation.Measured `json:"summary"`
	ServiceCores float64             `json:"serviceCores"`
	// Overheads are the HTTP costs simulated with (nil in files written
	// before they were recorded: the defaults).
	Overheads *sim.Overheads `json:"overheads,omitempty"`
}

// overridden is ov with the --overhead-cpu and --overhead-time overrides.
func (fl validateFlags) overridden(ov sim.Overheads) sim.Overheads {
	if fl.overheadCPU > 0 {
		ov.CPU = fl.overheadCPU.Seconds()
	}
	if fl.overheadTime > 0 {
		ov.Time = fl.overheadTime.Seconds()
	}
	return ov
}

// writeValidation prints the table and, with --out, writes validation.md,
// validation.json and the profile simulated with.
func writeValidation(cmd *cobra.Command, fl validateFlags, prof *calibration.Profile, rows []validation.Row, svcCores float64, ov sim.Overheads) error {
	out := cmd.OutOrStdout()
	var md strings.Builder
	if fl.simulateOnly {
		fmt.Fprintln(&md, "| app | CPU limit | trace | sim CPU (cores) | sim throughput | sim p95 (ms) | concurrency | sim memory (MiB) |")
		fmt.Fprintln(&md, "|---|---|---|---|---|---|---|---|")
		for _, r := range rows {
			fmt.Fprintf(&md, "| %s | %.2f | %s | %.3f | %.1f | %.2f | %d | %.1f |\n", r.Case.App, r.Case.CPU, r.Case.Trace,
				r.Sim.CPU, r.Sim.Throughput, 1e3*r.Sim.P95, r.Case.Concurrency, r.Sim.Memory/(1<<20))
		}
	} else if err := validation.WriteMarkdown(&md, rows); err != nil {
		return err
	}
	fmt.Fprint(out, md.String())
	if fl.out != "" {
		if err := os.MkdirAll(fl.out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(fl.out, "validation.md"), []byte(md.String()), 0o644); err != nil {
			return err
		}
		// The profile simulated with, re-measured segments included, so that
		// --profile with --simulate-only reproduces the simulated side.
		if err := prof.Save(filepath.Join(fl.out, "profile.json")); err != nil {
			return err
		}
		js, err := json.MarshalIndent(validationFile{rows, validation.Summary(rows), svcCores, &ov}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(fl.out, "validation.json"), js, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// validationPicks are the applications to validate: the given spec files,
// or the first n generated ones.
func validationPicks(fl validateFlags, prof *calibration.Profile) ([]validation.Pick, error) {
	var picks []validation.Pick
	for _, f := range fl.apps {
		s, err := app.Load(f)
		if err != nil {
			return nil, fmt.Errorf("--app: %w", err)
		}
		picks = append(picks, validation.Pick{Name: s.Name, Chain: s.Segments})
	}
	if len(picks) > 0 {
		return picks, nil
	}
	if fl.n < 1 {
		return nil, fmt.Errorf("--n %d: must be positive", fl.n)
	}
	opts := generator.DefaultOptions()
	opts.Apps, opts.Seed = fl.n, fl.poolSeed
	apps, err := generator.Generate(opts, prof)
	if err != nil {
		return nil, err
	}
	for _, a := range apps {
		picks = append(picks, validation.Pick{Name: a.Name(), Chain: a.Spec.Segments, Concurrency: a.Concurrency})
	}
	return picks, nil
}

// recalibrate re-measures every segment of the picks' chains on this
// machine, each in a fresh child process as `aware workload calibrate`
// does, and returns a copy of prof with those entries replaced.
func recalibrate(ctx context.Context, progress io.Writer, prof *calibration.Profile, picks []validation.Pick, childEnv []string) (*calibration.Profile, error) {
	var targets []calibration.Target
	for _, p := range picks {
		for _, s := range p.Chain {
			t := calibration.Target{Segment: s.Name, Size: s.Size}
			if !slices.Contains(targets, t) {
				targets = append(targets, t)
			}
		}
	}
	opts := calibration.DefaultOptions()
	measure, err := childMeasurer(childEnv, 1, opts)
	if err != nil {
		return nil, err
	}
	here, err := calibration.Run(ctx, targets, opts, measure, progressLine(progress))
	fmt.Fprintln(progress)
	if err != nil {
		return nil, fmt.Errorf("re-measure the validated segments: %w", err)
	}
	local := *prof
	local.Entries = slices.Clone(prof.Entries)
	for _, e := range here.Entries {
		i := slices.IndexFunc(local.Entries, func(o calibration.Entry) bool { return o.Segment == e.Segment && o.Size == e.Size })
		if i < 0 {
			local.Entries = append(local.Entries, e)
			continue
		}
		fmt.Fprintf(progress, "%s %d here: %.3g ms of CPU per request (profile %.3g)\n", e.Segment, e.Size, 1e3*e.CPUSeconds, 1e3*local.Entries[i].CPUSeconds)
		local.Entries[i] = e
	}
	local.Sort()
	return &local, nil
}

// replayValidation re-simulates the cases recorded in fl.replay with the
// current simulator and compares them with the real figures recorded there.
func replayValidation(cmd *cobra.Command, fl validateFlags) error {
	b, err := os.ReadFile(filepath.Join(fl.replay, "validation.json"))
	if err != nil {
		return fmt.Errorf("--replay: %w", err)
	}
	var rec validationFile
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("--replay: %s: %w", filepath.Join(fl.replay, "validation.json"), err)
	}
	if len(rec.Rows) == 0 {
		return fmt.Errorf("--replay: %s holds no rows", filepath.Join(fl.replay, "validation.json"))
	}
	path := filepath.Join(fl.replay, "profile.json")
	if fl.profile != "" {
		path = fl.profile
	}
	prof, err := calibration.Load(path)
	if err != nil {
		return fmt.Errorf("--replay: %w", err)
	}
	svcCores := fl.serviceCores
	if svcCores < 0 {
		svcCores = rec.ServiceCores
	}
	ov := sim.DefaultOverheads()
	if rec.Overheads != nil {
		ov = *rec.Overheads
	}
	ov = fl.overridden(ov)
	for i := range rec.Rows {
		if rec.Rows[i].Sim, err = validation.Simulate(cmd.Context(), prof, rec.Rows[i].Case, append(validation.ServiceOptions(svcCores), sim.WithOverheads(ov))...); err != nil {
			return err
		}
	}
	fl.simulateOnly = false
	return writeValidation(cmd, fl, prof, rec.Rows, svcCores, ov)
}
