package baselines

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/evaluation/progress"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// JobConfig is the main job (`aware run`): a generated pool, its HPA
// targets tuned, every baseline over every app.
type JobConfig struct {
	// Apps is the pool's size (--apps) and Seed the seed of the pool and
	// the simulation (--seed).
	Apps int
	Seed uint64
	// Duration is the simulated time (--duration) in steps of Step
	// (--step).
	Duration, Step time.Duration
	// Traces is the folder of the real traces (--traces; synthetic shapes
	// when absent).
	Traces string
	// Out receives the pool (Out/pool) and results.{json,md} (--out).
	Out string
	// Baselines are the baselines to run (--baselines; all when empty).
	Baselines []string
	// Tune is the per-app HPA target search.
	Tune Tuning
	// Bar draws progress (none when nil).
	Bar progress.Bar
}

// Validate reports the first bad field, naming its flag.
func (c JobConfig) Validate() error {
	if c.Apps < 1 {
		return fmt.Errorf("--apps %d: must be positive", c.Apps)
	}
	if c.Step < time.Second || c.Duration < c.Step {
		return fmt.Errorf("--step %s and --duration %s: need 1s ≤ step ≤ duration", c.Step, c.Duration)
	}
	if _, err := c.Tune.Config(c.Step, c.Seed); err != nil {
		return err
	}
	_, err := c.factories()
	return err
}

// factories are the baselines to run, in Factories' order.
func (c JobConfig) factories() ([]Factory, error) {
	var factories []Factory
	for _, f := range Factories() {
		if len(c.Baselines) == 0 || slices.Contains(c.Baselines, f.Name) {
			factories = append(factories, f)
		}
	}
	if len(factories) == 0 {
		var known []string
		for _, f := range Factories() {
			known = append(known, fmt.Sprintf("%q", f.Name))
		}
		return nil, fmt.Errorf("--baselines %v: none known (%s)", c.Baselines, strings.Join(known, ", "))
	}
	return factories, nil
}

// RunJob runs the main job: it generates the pool from the embedded
// profile, tunes each app's HPA target (unless Tune.Off), writes the pool,
// runs each baseline over every app, prints the report's tables to out and
// writes results.json and results.md to cfg.Out. Progress goes to
// progress.
func RunJob(ctx context.Context, cfg JobConfig, out, progress io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	factories, _ := cfg.factories()
	tc, _ := cfg.Tune.Config(cfg.Step, cfg.Seed)
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	apps, err := generator.FirstApps(prof, int64(cfg.Seed), cfg.Apps)
	if err != nil {
		return err
	}
	simApps, shapes, err := generator.Simulated(apps, cfg.Traces, cfg.Step, cfg.Seed)
	if err != nil {
		return err
	}
	if !cfg.Tune.Off {
		set, end := cfg.Bar.Start("[tune]  hpa+vpa ", tc.Steps)
		tc.Progress = set
		err := TunePool(ctx, prof, apps, simApps, tc)
		end()
		if err != nil {
			return err
		}
	}
	if err := generator.WritePool(filepath.Join(cfg.Out, "pool"), apps, prof); err != nil {
		return err
	}
	targets, minCPU, sources := make([]float64, len(apps)), make([]float64, len(apps)), make([]string, len(apps))
	for i, a := range apps {
		targets[i], minCPU[i], sources[i] = a.Profile.Targets.CPU, a.MinCPU, a.Load.Source
	}
	steps := int(cfg.Duration / cfg.Step)
	rep := Report{
		Command: fmt.Sprintf("aware run --apps %d --seed %d --duration %s --step %s%s", cfg.Apps, cfg.Seed, cfg.Duration, cfg.Step, cfg.Tune.Args()),
		Apps:    len(apps), Seed: cfg.Seed, Steps: steps, StepSeconds: cfg.Step.Seconds(), Shapes: shapes.Origin,
		ShapeStats: map[string]ShapeStats{},
	}
	for src, sh := range shapes.Shapes {
		rep.ShapeStats[src] = StatsOf(sh)
	}
	fmt.Fprintf(progress, "%d applications, %d steps of %s, shapes %v\n", len(apps), steps, cfg.Step, shapes.Origin)
	for k, f := range factories {
		cl, err := sim.New(prof, simApps, sim.WithStep(cfg.Step))
		if err != nil {
			return err
		}
		set, end := cfg.Bar.Start(fmt.Sprintf("[%d/%d] %-8s", k+1, len(factories), f.Name), steps)
		res, err := Run(ctx, cl, f, Config{Steps: steps, Seed: cfg.Seed, CPUTargets: targets, MinCPU: minCPU, Groups: sources, Progress: set})
		end()
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, res)
	}
	if err := rep.WriteMarkdown(out); err != nil {
		return err
	}
	if err := rep.Save(cfg.Out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nwrote %s and %s\n", filepath.Join(cfg.Out, "results.md"), filepath.Join(cfg.Out, "results.json"))
	return nil
}
