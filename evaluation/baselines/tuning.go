package baselines

import (
	"context"
	"fmt"
	"time"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Tuning is the per-app HPA target search as `aware run` and `aware
// generate` set it (their --tune-* flags), in time rather than steps.
type Tuning struct {
	// Window is the calibration window (--tune-window): the load just
	// before each app's evaluation start.
	Window time.Duration
	// Warmup is the start of the window not counted (--tune-warmup).
	Warmup time.Duration
	// MaxViolations is the largest fraction of counted steps violating
	// the SLO at which a target still meets it (--tune-max-violations).
	MaxViolations float64
	// Off keeps the profile's default CPU target for every app (--no-tune).
	Off bool
}

// DefaultTuning is the search `aware run` and `aware generate` make by
// default: a day's window, its first hour not counted, 1 % violations.
func DefaultTuning() Tuning {
	return Tuning{Window: 24 * time.Hour, Warmup: time.Hour, MaxViolations: 0.01}
}

// Config is the search for steps of step, or an error naming the flag.
func (t Tuning) Config(step time.Duration, seed uint64) (TuneConfig, error) {
	if t.Window < step || t.Warmup < 0 || t.Warmup >= t.Window {
		return TuneConfig{}, fmt.Errorf("--tune-window %s and --tune-warmup %s: need 0 ≤ warmup < window and a window of at least a step (%s)", t.Window, t.Warmup, step)
	}
	if !(t.MaxViolations >= 0 && t.MaxViolations < 1) {
		return TuneConfig{}, fmt.Errorf("--tune-max-violations %g: not in [0, 1)", t.MaxViolations)
	}
	return TuneConfig{Steps: int(t.Window / step), Warmup: int(t.Warmup / step), MaxViolations: t.MaxViolations, Seed: seed, Step: step}, nil
}

// Args are the flags that reproduce t, for a report's command line.
func (t Tuning) Args() string {
	if t.Off {
		return " --no-tune"
	}
	return fmt.Sprintf(" --tune-window %s --tune-warmup %s --tune-max-violations %g", t.Window, t.Warmup, t.MaxViolations)
}

// TuneDefault sets the HPA target of apps (simApps[i] is apps[i] on the
// simulator) by the default search, as `aware run` does: the studies that
// score agents against HPA+VPA use it so that their baseline is the tuned
// one.
func TuneDefault(ctx context.Context, prof *calibration.Profile, apps []generator.App, simApps []sim.App, step time.Duration, seed uint64) error {
	tc, err := DefaultTuning().Config(step, seed)
	if err != nil {
		return err
	}
	return TunePool(ctx, prof, apps, simApps, tc)
}
