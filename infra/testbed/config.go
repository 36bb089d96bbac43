package testbed

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/infra/testbed/manifests"
)

// Target is the kind of cluster a testbed runs on.
type Target string

// Targets.
const (
	// TargetLocal is the project's Docker-free control plane (`aware
	// cluster up`): kwok nodes run no containers, so the controller,
	// Prometheus and the databases run as local processes and the digital
	// twin plays the workloads; the program deploys the CRD, RBAC and apps.
	TargetLocal Target = "local"
	// TargetKubeconfig is any running cluster, by kubeconfig and context.
	TargetKubeconfig Target = "kubeconfig"
	// TargetKind is a kind cluster on the machine's container engine,
	// created (and deleted by down) by the driver, with the project's image
	// built and loaded into its nodes.
	TargetKind Target = "kind"
	// TargetGKE is a Google Kubernetes Engine cluster and node pool made by
	// the program itself (Pulumi's gcp provider), sized from the apps.
	TargetGKE Target = "gke"
)

// Targets lists the targets.
var Targets = []Target{TargetLocal, TargetKubeconfig, TargetKind, TargetGKE}

// PoolSize is the size of the generated pool apps are selected from.
const PoolSize = 1000

// Config is a testbed stack's configuration.
type Config struct {
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
}

// DefaultConfig is a local testbed of the whole pool.
func DefaultConfig() Config {
	o := manifests.DefaultOptions()
	return Config{Target: TargetLocal, Apps: PoolSize, PoolSeed: 1, Options: o, Kind: DefaultKindConfig(), GKE: DefaultGKEConfig()}
}

// ForTarget turns off what the target cannot run: on the local control
// plane no pod runs, so only the CRD, RBAC and apps are deployed.
func (c Config) ForTarget() Config {
	if c.Target == TargetLocal {
		c.Options.Components = manifests.Components{}
	}
	return c
}

// Validate checks the configuration, naming every field that is wrong.
func (c Config) Validate() error {
	var errs []error
	if !slices.Contains(Targets, c.Target) {
		names := make([]string, len(Targets))
		for i, t := range Targets {
			names[i] = string(t)
		}
		errs = append(errs, fmt.Errorf("target %q is not one of %s", c.Target, strings.Join(names, ", ")))
	}
	switch c.Target {
	case TargetGKE:
		if c.Kubeconfig != "" {
			errs = append(errs, fmt.Errorf("kubeconfig %q: the gke target makes its own cluster (use the kubeconfig target for an existing one)", c.Kubeconfig))
		}
		errs = append(errs, c.GKE.validate())
	default:
		if c.Kubeconfig == "" {
			errs = append(errs, fmt.Errorf("kubeconfig: the %s target needs the cluster's kubeconfig file", c.Target))
		}
	}
	if c.Target == TargetKind {
		errs = append(errs, c.Kind.validate())
	}
	switch m := c.Options.AppOptions.UpdateMode; m {
	case "", v1alpha1.UpdateModeOff, v1alpha1.UpdateModeInitial, v1alpha1.UpdateModeRecreate, v1alpha1.UpdateModeInPlaceOrRecreate:
	default:
		errs = append(errs, fmt.Errorf("updateMode %q: not one of Off, Initial, Recreate, InPlaceOrRecreate", m))
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
