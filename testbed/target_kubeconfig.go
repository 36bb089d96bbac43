package testbed

import (
	"context"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// TargetKubeconfig is any running cluster, by kubeconfig and context.
const TargetKubeconfig Target = "kubeconfig"

// kubeconfigTarget: every component runs as pods on a cluster the user
// gives; up checks that it resizes pods in place, down destroys the
// stack's resources.
type kubeconfigTarget struct{}

func (kubeconfigTarget) name() Target { return TargetKubeconfig }
func (kubeconfigTarget) help() string { return "any cluster" }

func (kubeconfigTarget) validate(cfg Config) []error { return []error{needKubeconfig(cfg)} }
func (kubeconfigTarget) forTarget(cfg Config) Config { return cfg }
func (kubeconfigTarget) kubeconfigFromUp() bool      { return false }
func (kubeconfigTarget) preview(Config) error        { return nil }
func (kubeconfigTarget) plugins() []plugin           { return nil }

func (kubeconfigTarget) cluster(*pulumi.Context, Config, manifests.Options, *Testbed, *kubernetes.ProviderArgs) ([]pulumi.ResourceOption, error) {
	return nil, nil
}

func (kubeconfigTarget) start(ctx context.Context, d *Driver, cfg Config) (Config, error) {
	return d.checkInPlace(ctx, cfg)
}

func (kubeconfigTarget) started(context.Context, *Driver, Config) (*local.Endpoints, error) {
	return nil, nil
}

func (kubeconfigTarget) down(ctx context.Context, d *Driver, s auto.Stack) error {
	return d.destroy(ctx, s)
}

func (kubeconfigTarget) status(_ *Driver, _ *Status, kubeconfig string) (string, error) {
	return kubeconfig, nil
}
