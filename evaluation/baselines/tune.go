package baselines

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// TuneConfig is a search of per-application HPA targets.
type TuneConfig struct {
	// Targets are the candidate CPU targets, ascending (DefaultTuneTargets
	// when nil).
	Targets []float64
	// Steps is the calibration window: the steps just before each
	// application's evaluation start (its trace offset), which the
	// evaluation therefore never sees.
	Steps int
	// Warmup steps at the window's start are not counted: the autoscaler
	// starts from the initial allocation with no history.
	Warmup int
	// MaxViolations is the largest fraction of counted steps with an SLO
	// violation at which a target still meets the SLO.
	MaxViolations float64
	Seed          uint64
	// MinCPU are the apps' CPU floors (Config.MinCPU).
	MinCPU []float64
	// Step is the simulation step, the evaluation's.
	Step time.Duration
	// Options further configure the simulated cluster.
	Options []sim.Option
	// Progress is called after each step with the steps done.
	Progress func(done int)
}

// DefaultTuneTargets are 0.20, 0.25, …, 0.90.
func DefaultTuneTargets() []float64 {
	var ts []float64
	for k := 4; k <= 18; k++ {
		ts = append(ts, float64(k)/20)
	}
	return ts
}

// Tuned is the outcome of the search for one application.
type Tuned struct {
	// Target is the highest candidate meeting the SLO or, when none does,
	// the one with the fewest violations (the higher on a tie).
	Target float64
	// Violations is the fraction of counted steps violating the SLO at
	// Target in the calibration window.
	Violations float64
	// Met reports whether Target meets the SLO.
	Met bool
}

// Tune finds each application's HPA CPU target as the paper set it (§5.3:
// "the maximum CPU utilisation at which the SLO was met"): it runs the
// HPA+VPA baseline at every candidate target over the calibration window
// that ends where the application's evaluation starts, and keeps the
// highest target whose violations stay within cfg.MaxViolations.
func Tune(ctx context.Context, prof *calibration.Profile, apps []sim.App, cfg TuneConfig) ([]Tuned, error) {
	targets := cfg.Targets
	if targets == nil {
		targets = DefaultTuneTargets()
	}
	var errs []error
	if len(targets) == 0 {
		errs = append(errs, errors.New("targets: empty"))
	}
	for i, t := range targets {
		if !(t > 0 && t <= 1) || (i > 0 && t <= targets[i-1]) {
			errs = append(errs, fmt.Errorf("targets[%d]: %g is not in (0, 1] and above the one before", i, t))
		}
	}
	if cfg.Step < time.Second {
		errs = append(errs, fmt.Errorf("step %s: must be at least a second", cfg.Step))
	}
	if cfg.Steps < 1 || cfg.Warmup < 0 || cfg.Warmup >= cfg.Steps {
		errs = append(errs, fmt.Errorf("steps %d and warmup %d: need 0 ≤ warmup < steps", cfg.Steps, cfg.Warmup))
	}
	if !(cfg.MaxViolations >= 0 && cfg.MaxViolations < 1) {
		errs = append(errs, fmt.Errorf("maxViolations: %g is not in [0, 1)", cfg.MaxViolations))
	}
	if len(apps) == 0 {
		errs = append(errs, errors.New("apps: none"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("baselines: tune: %w", err)
	}
	f, _ := Find("hpa+vpa")
	// One simulated application per (application, candidate), started
	// cfg.Steps before the application's evaluation.
	k := len(targets)
	grid := make([]sim.App, 0, len(apps)*k)
	perApp := make([]float64, 0, len(apps)*k)
	minCPU := make([]float64, 0, len(apps)*k)
	for i, a := range apps {
		n := len(a.Load.Shape)
		if n == 0 {
			return nil, fmt.Errorf("baselines: tune: %s has no load shape", a.Name)
		}
		a.Load.Offset = ((a.Load.Offset-cfg.Steps)%n + n) % n
		floor := 0.0 // the cluster's bounds
		if i < len(cfg.MinCPU) {
			floor = cfg.MinCPU[i]
		}
		for _, t := range targets {
			grid = append(grid, a)
			perApp = append(perApp, t)
			minCPU = append(minCPU, floor)
		}
	}
	cl, err := sim.New(prof, grid, append([]sim.Option{sim.WithStep(cfg.Step)}, cfg.Options...)...)
	if err != nil {
		return nil, fmt.Errorf("baselines: tune: %w", err)
	}
	acc, err := drive(ctx, cl, f, Config{Steps: cfg.Steps, Seed: cfg.Seed, CPUTargets: perApp, MinCPU: minCPU, Progress: cfg.Progress}, cfg.Warmup)
	if err != nil {
		return nil, fmt.Errorf("baselines: tune: %w", err)
	}
	out := make([]Tuned, len(apps))
	for i := range apps {
		best := Tuned{Violations: math.Inf(1)}
		for j, t := range targets {
			a := acc[i*k+j]
			v := float64(a.violations) / float64(max(a.steps, 1))
			switch {
			case v <= cfg.MaxViolations:
				best = Tuned{Target: t, Violations: v, Met: true}
			case !best.Met && v <= best.Violations:
				best = Tuned{Target: t, Violations: v}
			}
		}
		out[i] = best
	}
	return out, nil
}

// TunePool tunes the HPA target of every generated app (simApps[i] is
// apps[i] on the simulator) and stores it in the app's profile with a
// record of the search.
func TunePool(ctx context.Context, prof *calibration.Profile, apps []generator.App, simApps []sim.App, cfg TuneConfig) error {
	if len(apps) != len(simApps) {
		return fmt.Errorf("baselines: tune: %d apps but %d simulated apps", len(apps), len(simApps))
	}
	cfg.MinCPU = make([]float64, len(apps))
	for i, a := range apps {
		cfg.MinCPU[i] = a.MinCPU
	}
	tuned, err := Tune(ctx, prof, simApps, cfg)
	if err != nil {
		return err
	}
	window := (time.Duration(cfg.Steps) * cfg.Step).String()
	for i, t := range tuned {
		apps[i].Profile.Targets.CPU = t.Target
		apps[i].Tuning = &generator.Tuning{Window: window, Violations: math.Round(t.Violations*1e4) / 1e4, Met: t.Met, MaxViolations: cfg.MaxViolations}
	}
	return nil
}
