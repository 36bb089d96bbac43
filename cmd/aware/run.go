package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

type runFlags struct {
	apps     int
	seed     uint64
	duration time.Duration
	step     time.Duration
	traces   string
	out      string
	only     []string
	tune     tuneFlags
}

// tuneFlags are the per-app HPA target search's flags, shared by `aware run`
// and `aware generate`.
type tuneFlags struct {
	window        time.Duration
	warmup        time.Duration
	maxViolations float64
	off           bool
}

// defaultTune is the search `aware run` and `aware generate` make by default.
var defaultTune = tuneFlags{window: 24 * time.Hour, warmup: time.Hour, maxViolations: 0.01}

// tuneApps sets the HPA target of apps (simApps[i] is apps[i] on the
// simulator) by the default search, as `aware run` does; the commands that
// score agents against HPA+VPA use it so that their baseline is the
// tuned one.
func tuneApps(ctx context.Context, prof *calibration.Profile, apps []generator.App, simApps []sim.App, step time.Duration, seed uint64) error {
	tc, err := defaultTune.config(step, seed)
	if err != nil {
		return err
	}
	return baselines.TunePool(ctx, prof, apps, simApps, tc)
}

func (t *tuneFlags) register(f *pflag.FlagSet) {
	f.DurationVar(&t.window, "tune-window", defaultTune.window, "calibration window of the per-app HPA target search: the load just before each app's evaluation start")
	f.DurationVar(&t.warmup, "tune-warmup", defaultTune.warmup, "start of the calibration window not counted (the autoscaler starts without history)")
	f.Float64Var(&t.maxViolations, "tune-max-violations", defaultTune.maxViolations, "largest fraction of calibration steps violating the SLO at which a target still meets it")
	f.BoolVar(&t.off, "no-tune", false, "keep the profile's default CPU target (0.7) for every app instead of searching it")
}

// config is the search for steps of step, or an error naming the flag.
func (t tuneFlags) config(step time.Duration, seed uint64) (baselines.TuneConfig, error) {
	if t.window < step || t.warmup < 0 || t.warmup >= t.window {
		return baselines.TuneConfig{}, fmt.Errorf("--tune-window %s and --tune-warmup %s: need 0 ≤ warmup < window and a window of at least a step (%s)", t.window, t.warmup, step)
	}
	if !(t.maxViolations >= 0 && t.maxViolations < 1) {
		return baselines.TuneConfig{}, fmt.Errorf("--tune-max-violations %g: not in [0, 1)", t.maxViolations)
	}
	return baselines.TuneConfig{Steps: int(t.window / step), Warmup: int(t.warmup / step), MaxViolations: t.maxViolations, Seed: seed, Step: step}, nil
}

// newRunCmd is `aware run`, the main job (`make run`).
func newRunCmd() *cobra.Command {
	var fl runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "The main job: generate the pool and run the baseline autoscalers on the simulator",
		Long: `The main job on the embedded default. It generates the application pool, builds the
calibrated simulator from the embedded profile, and runs each baseline autoscaler (static,
HPA, VPA, HPA+VPA) over every application for a day of trace, then prints a table per
baseline (mean reward, CPU and memory utilisation, SLO violations, OOM kills, drops,
replicas) and writes results.json and results.md, with the pool, to --out. Load shapes
come from ../shared/traces when present, else from seeded synthetic stand-ins.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMain(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), fl)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.apps, "apps", 1000, "applications to generate")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the pool and the simulation")
	f.DurationVar(&fl.duration, "duration", 24*time.Hour, "simulated time")
	f.DurationVar(&fl.step, "step", 30*time.Second, "simulation step")
	f.StringVar(&fl.traces, "traces", "../shared/traces", "folder of the real traces (synthetic shapes when absent)")
	f.StringVar(&fl.out, "out", "out/run", "output folder for the pool and the results")
	f.StringSliceVar(&fl.only, "baselines", nil, `run only these baselines (default: static, hpa, vpa, hpa+vpa, "hpa+vpa (default target)")`)
	fl.tune.register(f)
	return cmd
}

func runMain(ctx context.Context, out, progress io.Writer, fl runFlags) error {
	if fl.apps < 1 {
		return fmt.Errorf("--apps %d: must be positive", fl.apps)
	}
	if fl.step < time.Second || fl.duration < fl.step {
		return fmt.Errorf("--step %s and --duration %s: need 1s ≤ step ≤ duration", fl.step, fl.duration)
	}
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	opts := generator.DefaultOptions()
	opts.Apps, opts.Seed = fl.apps, int64(fl.seed)
	tc, err := fl.tune.config(fl.step, fl.seed)
	if err != nil {
		return err
	}
	apps, err := generator.Generate(opts, prof)
	if err != nil {
		return err
	}
	shapes, err := generator.LoadShapes(fl.traces, fl.step, fl.seed)
	if err != nil {
		return err
	}
	simApps, err := generator.SimApps(apps, shapes)
	if err != nil {
		return err
	}
	if !fl.tune.off {
		bar := newBar(progress, "[tune]  hpa+vpa ", tc.Steps)
		tc.Progress = bar.set
		err := baselines.TunePool(ctx, prof, apps, simApps, tc)
		bar.done()
		if err != nil {
			return err
		}
	}
	if err := writePool(filepath.Join(fl.out, "pool"), apps, prof); err != nil {
		return err
	}
	targets, minCPU, sources := make([]float64, len(apps)), make([]float64, len(apps)), make([]string, len(apps))
	for i, a := range apps {
		targets[i], minCPU[i], sources[i] = a.Profile.Targets.CPU, a.MinCPU, a.Load.Source
	}
	steps := int(fl.duration / fl.step)
	var factories []baselines.Factory
	for _, f := range baselines.Factories() {
		if len(fl.only) == 0 || slices.Contains(fl.only, f.Name) {
			factories = append(factories, f)
		}
	}
	if len(factories) == 0 {
		var known []string
		for _, f := range baselines.Factories() {
			known = append(known, fmt.Sprintf("%q", f.Name))
		}
		return fmt.Errorf("--baselines %v: none known (%s)", fl.only, strings.Join(known, ", "))
	}
	rep := baselines.Report{
		Command: fmt.Sprintf("aware run --apps %d --seed %d --duration %s --step %s%s", fl.apps, fl.seed, fl.duration, fl.step, fl.tune.args()),
		Apps:    len(apps), Seed: fl.seed, Steps: steps, StepSeconds: fl.step.Seconds(), Shapes: shapes.Origin,
		ShapeStats: map[string]baselines.ShapeStats{},
	}
	for src, sh := range shapes.Shapes {
		rep.ShapeStats[src] = baselines.StatsOf(sh)
	}
	fmt.Fprintf(progress, "%d applications, %d steps of %s, shapes %v\n", len(apps), steps, fl.step, shapes.Origin)
	for k, f := range factories {
		cl, err := sim.New(prof, simApps, sim.WithStep(fl.step))
		if err != nil {
			return err
		}
		bar := newBar(progress, fmt.Sprintf("[%d/%d] %-8s", k+1, len(factories), f.Name), steps)
		res, err := baselines.Run(ctx, cl, f, baselines.Config{Steps: steps, Seed: fl.seed, CPUTargets: targets, MinCPU: minCPU, Groups: sources, Progress: bar.set})
		bar.done()
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, res)
	}
	if err := rep.WriteMarkdown(out); err != nil {
		return err
	}
	if err := rep.Save(fl.out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nwrote %s and %s\n", filepath.Join(fl.out, "results.md"), filepath.Join(fl.out, "results.json"))
	return nil
}

// bar is a one-line progress bar redrawn in place.
type bar struct {
	w     io.Writer
	label string
	total int
	last  int
	every int // percent between redraws: 1 on a terminal, 10 in logs
	start time.Time
}

func newBar(w io.Writer, label string, total int) *bar {
	b := &bar{w: w, label: label, total: total, last: -1, every: 10, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			b.every = 1
		}
	}
	b.set(0)
	return b
}

func (b *bar) set(done int) {
	pct := 100 * done / b.total
	if pct == b.last || (pct%b.every != 0 && done != b.total) {
		return
	}
	b.last = pct
	const width = 30
	fill := width * done / b.total
	el := time.Since(b.start)
	eta := ""
	if done > 0 && done < b.total {
		eta = fmt.Sprintf(", ETA %s", (el * time.Duration(b.total-done) / time.Duration(done)).Round(time.Second))
	}
	fmt.Fprintf(b.w, "\r%s [%s%s] %3d%% %s%s", b.label, strings.Repeat("#", fill), strings.Repeat(".", width-fill), pct, el.Round(100*time.Millisecond), eta)
}

func (b *bar) done() { fmt.Fprintln(b.w) }

// args are the flags that reproduce t, when not the defaults.
func (t tuneFlags) args() string {
	if t.off {
		return " --no-tune"
	}
	return fmt.Sprintf(" --tune-window %s --tune-warmup %s --tune-max-violations %g", t.window, t.warmup, t.maxViolations)
}

// writePool writes the pool's apps and its summary (summary.md) to dir.
func writePool(dir string, apps []generator.App, prof *calibration.Profile) error {
	if err := generator.WriteDir(dir, apps); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "summary.md"))
	if err != nil {
		return err
	}
	if err := generator.Summarize(apps, prof).WriteMarkdown(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
