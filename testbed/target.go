package testbed

import (
	"context"
	"strings"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// Target is the kind of cluster a testbed runs on (Config.Target, the
// stack's target key, --target): one of Targets.
type Target string

// target is what the testbed does differently on one kind of cluster. The
// program (Deploy), the configuration (Validate, ForTarget) and the driver
// (Up, Down, Status) ask the target chosen from Config.Target once
// (targetOf) instead of switching on its name. Each target is one file,
// target_<name>.go, holding its name, its type and its specifics, and one
// entry in targets.
type target interface {
	// name is the target's Config.Target; help says what it is, for the
	// --target flag.
	name() Target
	help() string
	// validate names what is wrong with cfg's fields that concern the
	// target: the kubeconfig and the target's own section (Kind, GKE).
	// Nil entries are no error.
	validate(cfg Config) []error
	// forTarget turns off in cfg what the target cannot run.
	forTarget(cfg Config) Config
	// kubeconfigFromUp reports whether up provides the kubeconfig (the
	// driver starts or finds the cluster), so that cfg needs none before.
	kubeconfigFromUp() bool
	// preview is what a preview needs that only up would provide (nil:
	// nothing).
	preview(cfg Config) error
	// cluster registers, in the program, the cluster the objects go to
	// when the stack makes it, pointing pargs (the Kubernetes provider's)
	// at it; it returns the provider's resource options.
	cluster(ctx *pulumi.Context, cfg Config, o manifests.Options, tb *Testbed, pargs *kubernetes.ProviderArgs) ([]pulumi.ResourceOption, error)
	// start checks the machine (preflight), creates or reuses the cluster
	// and loads what it needs (images) before the stack is deployed, and
	// returns cfg as it is deployed: with the cluster's kubeconfig, the
	// loaded image and the update mode the cluster supports.
	start(ctx context.Context, d *Driver, cfg Config) (Config, error)
	// plugins are the Pulumi resource plugins besides Kubernetes that the
	// stack needs, which the engine installs into the driver's home.
	plugins() []plugin
	// started runs, after the deployment, what plays the cluster's pods
	// outside it (the local target's supervisor) and returns its endpoints
	// (nil: nothing runs outside the cluster).
	started(ctx context.Context, d *Driver, cfg Config) (*local.Endpoints, error)
	// down deletes what up made: the cluster it started (its objects go
	// with it), or else the stack's resources.
	down(ctx context.Context, d *Driver, s auto.Stack) error
	// status fills in st what the target adds (its local processes) and
	// returns the kubeconfig the MPAs are read through, given the stack's.
	status(d *Driver, st *Status, kubeconfig string) (string, error)
}

// plugin is a Pulumi resource plugin at a pinned version.
type plugin struct{ name, version string }

// targets are the testbed's targets, in the order Targets lists them.
// Adding one (eks) is a file target_eks.go with its type and an entry here.
var targets = []target{localTarget{}, kubeconfigTarget{}, kindTarget{}, gkeTarget{}}

// Targets lists the targets.
var Targets = func() []Target {
	names := make([]Target, len(targets))
	for i, t := range targets {
		names[i] = t.name()
	}
	return names
}()

// targetOf is the target named n.
func targetOf(n Target) (target, bool) {
	for _, t := range targets {
		if t.name() == n {
			return t, true
		}
	}
	return nil, false
}

// stackTarget is the target of a deployed stack; one that names no known
// target (a stack never configured) is treated as an existing cluster's,
// whose resources the stack holds.
func stackTarget(n Target) target {
	if t, ok := targetOf(n); ok {
		return t
	}
	return kubeconfigTarget{}
}

// TargetHelp describes the targets, for the --target flag.
func TargetHelp() string {
	var b strings.Builder
	b.WriteString("where: ")
	for i, t := range targets {
		switch {
		case i == len(targets)-1 && i > 0:
			b.WriteString(" or ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(`"` + string(t.name()) + `" (` + t.help() + ")")
	}
	return b.String()
}
