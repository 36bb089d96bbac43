package testbed

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

func restConfig(kubeconfig, kctx string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kctx}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("testbed: kubeconfig %s: %w", kubeconfig, err)
	}
	return rc, nil
}

// InPlaceMinor is the first Kubernetes minor version whose API servers and
// kubelets resize pods in place by default (InPlacePodVerticalScaling
// beta in 1.33, GA in 1.35).
const InPlaceMinor = 33

// checkInPlace asks the cluster its version: before InPlaceMinor the
// apps' MPAs that would resize in place are set to Recreate instead, with
// a warning (the controller would otherwise try, be refused and fall back
// on every step).
func (d *Driver) checkInPlace(ctx context.Context, cfg Config) (Config, error) {
	if cfg.Options.AppOptions.UpdateMode != "" && cfg.Options.AppOptions.UpdateMode != v1alpha1.UpdateModeInPlaceOrRecreate {
		return cfg, nil
	}
	rc, err := restConfig(cfg.Kubeconfig, cfg.Context)
	if err != nil {
		return cfg, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return cfg, fmt.Errorf("testbed: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return cfg, fmt.Errorf("testbed: the cluster's version (is it reachable?): %w", err)
	}
	if minor, ok := serverMinor(v.Major, v.Minor); ok && minor < InPlaceMinor {
		fmt.Fprintf(d.out(), "warning: the cluster runs Kubernetes %s.%s, which does not resize pods in place (1.%d and later do): the apps' MPAs use updateMode Recreate\n",
			v.Major, v.Minor, InPlaceMinor)
		cfg.Options.AppOptions.UpdateMode = v1alpha1.UpdateModeRecreate
	}
	return cfg, nil
}

// serverMinor is the minor version of a Kubernetes 1.x server ("30+" on
// some clouds is 30).
func serverMinor(major, minor string) (int, bool) {
	if major != "1" {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimRight(minor, "+"))
	return n, err == nil
}
