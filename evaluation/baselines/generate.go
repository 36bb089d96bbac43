package baselines

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

// GenerateConfig is `aware generate`: the pool, each app's HPA target
// tuned on the simulator, written with its summary and, optionally, its
// manifests.
type GenerateConfig struct {
	// Options are the generator's (--apps, --seed, --max-segments,
	// --train-fraction).
	Options generator.Options
	// Out is the output directory (--out). Required.
	Out string
	// Profile is the calibration profile's path (--profile; the embedded
	// one when empty).
	Profile string
	// Manifests also writes Out/manifests (--manifests), with
	// ManifestOptions (--image, --namespace, --recommender,
	// --update-mode).
	Manifests       bool
	ManifestOptions generator.ManifestOptions
	// Text prints the summary as plain text instead of Markdown (--text).
	Text bool
	// Traces (--traces) and Step (--step) are the target search's load
	// shapes and simulation step; Tune the search.
	Traces string
	Step   time.Duration
	Tune   Tuning
}

// Validate reports every bad field, each naming its flag.
func (c GenerateConfig) Validate() error {
	var errs []error
	if c.Out == "" {
		errs = append(errs, errors.New("--out: an output directory is required"))
	}
	if c.Options.Apps <= 0 {
		errs = append(errs, fmt.Errorf("--apps: %d must be positive", c.Options.Apps))
	}
	if c.Options.MaxSegments <= 0 {
		errs = append(errs, fmt.Errorf("--max-segments: %d must be positive", c.Options.MaxSegments))
	}
	if !(c.Options.TrainFraction >= 0 && c.Options.TrainFraction <= 1) {
		errs = append(errs, fmt.Errorf("--train-fraction: %g is not in [0, 1]", c.Options.TrainFraction))
	}
	switch c.ManifestOptions.UpdateMode {
	case v1alpha1.UpdateModeOff, v1alpha1.UpdateModeInitial, v1alpha1.UpdateModeRecreate, v1alpha1.UpdateModeInPlaceOrRecreate:
	default:
		errs = append(errs, fmt.Errorf("--update-mode: %q is not Off, Initial, Recreate or InPlaceOrRecreate", c.ManifestOptions.UpdateMode))
	}
	if _, err := c.Tune.Config(c.Step, uint64(c.Options.Seed)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// GeneratePool generates the pool of cfg, tunes each app's HPA CPU target
// (unless cfg.Tune.Off), writes the pool, its summary and, with
// cfg.Manifests, its manifests to cfg.Out, and prints the summary to out.
func GeneratePool(ctx context.Context, cfg GenerateConfig, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	tc, _ := cfg.Tune.Config(cfg.Step, uint64(cfg.Options.Seed))
	prof, err := calibration.Default()
	if cfg.Profile != "" {
		prof, err = calibration.Load(cfg.Profile)
	}
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	apps, err := generator.Generate(cfg.Options, prof)
	if err != nil {
		return err
	}
	if !cfg.Tune.Off {
		simApps, _, err := generator.Simulated(apps, cfg.Traces, cfg.Step, uint64(cfg.Options.Seed))
		if err != nil {
			return err
		}
		if err := TunePool(ctx, prof, apps, simApps, tc); err != nil {
			return err
		}
	}
	if err := generator.WritePool(cfg.Out, apps, prof); err != nil {
		return err
	}
	if cfg.Manifests {
		if err := generator.WriteManifests(cfg.Out, apps, cfg.ManifestOptions); err != nil {
			return err
		}
	}
	s := generator.Summarize(apps, prof)
	if cfg.Text {
		return s.WriteText(out)
	}
	return s.WriteMarkdown(out)
}
