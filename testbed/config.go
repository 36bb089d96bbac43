package testbed

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/testbed/manifests"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

// PoolSize is the size of the generated pool apps are selected from.
const PoolSize = 1000

// Config is a testbed stack's configuration.
type Config struct {
	// Target is where the testbed runs: one of Targets.
	Target Target
	// Kubeconfig is the cluster's kubeconfig file and Context its context
	// ("" is the file's current context).
	Kubeconfig, Context string
	// Apps is how many applications of the generated pool to deploy,
	// chosen by SelectSeed (all of them when Apps is PoolSize).
	Apps int
	// PoolSeed is the generator's seed of the pool (`aware generate
	// --seed`), SelectSeed the seed of the selection (0: the first Apps of
	// the pool, as the twin and the benchmarks take them).
	PoolSeed   int64
	SelectSeed uint64
	// Options are the objects' options; Apps is filled from the pool.
	Options manifests.Options
	// Credentials of the external services.
	Credentials manifests.Credentials
	// Kind sizes the kind target's cluster; GKE the gke target's.
	Kind KindConfig
	GKE  GKEConfig
	// TimeScale is the local target's simulated seconds per wall second
	// (default local.DefaultTimeScale): its digital twin plays the apps
	// that much faster than the wall clock and the controller's
	// recommenders follow the twin's time (docs/testbed.md). Other
	// targets run in real time and take only the default, which they
	// ignore.
	TimeScale float64
}

// DefaultConfig is a local testbed of the whole pool.
func DefaultConfig() Config {
	o := manifests.DefaultOptions()
	return Config{Target: TargetLocal, Apps: PoolSize, PoolSeed: 1, Options: o, Kind: DefaultKindConfig(), GKE: DefaultGKEConfig(),
		TimeScale: local.DefaultTimeScale}
}

// ForTarget turns off what the target cannot run (on the local control
// plane no pod runs, so only the CRD, RBAC and apps are deployed).
func (c Config) ForTarget() Config {
	if t, ok := targetOf(c.Target); ok {
		return t.forTarget(c)
	}
	return c
}

// Previewable says what a preview of c lacks that only up would provide
// (the local target's control plane), before anything is built or run.
func (c Config) Previewable() error {
	if t, ok := targetOf(c.Target); ok {
		return t.preview(c)
	}
	return nil
}

// Validate checks the configuration, naming every field that is wrong.
func (c Config) Validate() error {
	var errs []error
	if t, ok := targetOf(c.Target); ok {
		errs = append(errs, t.validate(c)...)
	} else {
		names := make([]string, len(Targets))
		for i, t := range Targets {
			names[i] = string(t)
		}
		errs = append(errs, fmt.Errorf("target %q is not one of %s", c.Target, strings.Join(names, ", ")), needKubeconfig(c))
	}
	switch m := c.Options.AppOptions.UpdateMode; m {
	case "", v1alpha1.UpdateModeOff, v1alpha1.UpdateModeInitial, v1alpha1.UpdateModeRecreate, v1alpha1.UpdateModeInPlaceOrRecreate:
	default:
		errs = append(errs, fmt.Errorf("updateMode %q: not one of Off, Initial, Recreate, InPlaceOrRecreate", m))
	}
	switch k := c.TimeScale; {
	case !(k > 0) || math.IsInf(k, 0):
		errs = append(errs, fmt.Errorf("timeScale %g: want a positive finite number of simulated seconds per wall second", k))
	case c.Target == TargetLocal:
		if _, _, err := local.TwinClock(c.Options.Step, k); err != nil {
			errs = append(errs, fmt.Errorf("timeScale %g with step %s on the local target: %w", k, c.Options.Step, err))
		}
	case k != local.DefaultTimeScale:
		errs = append(errs, fmt.Errorf("timeScale %g: only the local target (a digital twin) runs accelerated time; the %s target runs in real time (leave timeScale at its default, %d)", k, c.Target, local.DefaultTimeScale))
	}
	if c.Apps < 0 || c.Apps > PoolSize {
		errs = append(errs, fmt.Errorf("apps %d: must be between 0 and %d (the generated pool)", c.Apps, PoolSize))
	}
	if c.Options.Components.ExternalServices {
		if err := c.Credentials.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Resolve validates c and returns its objects' options with the selected
// apps, through manifests.Options.WithDefaults.
func (c Config) Resolve() (manifests.Options, error) {
	if err := c.Validate(); err != nil {
		return manifests.Options{}, fmt.Errorf("testbed config: %w", err)
	}
	apps, err := c.resolveApps()
	if err != nil {
		return manifests.Options{}, err
	}
	o := c.Options
	o.Apps = apps
	return o.WithDefaults()
}

// needKubeconfig is the error of a target that deploys to a cluster by
// its kubeconfig when cfg names none.
func needKubeconfig(cfg Config) error {
	if cfg.Kubeconfig == "" {
		return fmt.Errorf("kubeconfig: the %s target needs the cluster's kubeconfig file", cfg.Target)
	}
	return nil
}

// resolveApps are the apps cfg selects.
func (c Config) resolveApps() ([]generator.App, error) {
	prof, err := calibration.Default()
	if err != nil {
		return nil, err
	}
	apps, err := generator.GenerateSelected(prof, c.PoolSeed, c.Apps, c.SelectSeed)
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	return apps, nil
}
