package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/twin"
)

// twinFlags are the flags of `aware twin`.
type twinFlags struct {
	kubeconfig string
	apps       int
	poolSeed   int64
	seed       uint64
	namespace  string
	selector   string
	addr       string
	tick       time.Duration
	step       time.Duration
	traces     string
}

// newTwinCmd is `aware twin`: the digital twin of the generated pool on a
// cluster whose pods do no work.
func newTwinCmd() *cobra.Command {
	var fl twinFlags
	cmd := &cobra.Command{
		Use:   "twin",
		Short: "Run the digital twin: simulate the generated apps deployed on a cluster and export their metrics",
		Long: `Watches the Deployments and Pods of the generated applications (label
app.kubernetes.io/part-of=aware) on the cluster of --kubeconfig, typically the local
control plane with kwok's fake nodes where pods do no work. Every --tick it reads each
application's allocation (Running pods, the workload container's applied limits), advances
the calibrated simulator one --step for it and exports what cAdvisor, kube-state-metrics
and the workload server would report on http://ADDR/metrics for Prometheus to scrape:
rates are in wall-clock time, so simulated time runs step/tick times faster. The apps are
the first --apps of the pool of --pool-seed, with load shapes from --traces (synthetic
stand-ins when absent), exactly as ` + "`aware generate`" + ` and the simulator build them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTwin(cmd.Context(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, then ~/.kube/config)")
	f.IntVar(&fl.apps, "apps", 1000, "applications of the generated pool to simulate (the first N)")
	f.Int64Var(&fl.poolSeed, "pool-seed", 1, "seed of the generated pool")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the synthetic load shapes and the simulator's noise")
	f.StringVar(&fl.namespace, "namespace", "", "namespace of the applications (default: all namespaces)")
	f.StringVar(&fl.selector, "selector", twin.DefaultSelector, "label selector of the applications' Deployments and Pods")
	f.StringVar(&fl.addr, "addr", "127.0.0.1:9400", "address of the metrics endpoint")
	f.DurationVar(&fl.tick, "tick", time.Second, "wall-clock time per simulator step")
	f.DurationVar(&fl.step, "step", 10*time.Second, "simulated time per step (and the load shapes' step)")
	f.StringVar(&fl.traces, "traces", "../shared/traces", "folder of the real traces (synthetic shapes when absent)")
	return cmd
}

func runTwin(ctx context.Context, fl twinFlags) error {
	var errs []error
	if fl.apps < 1 {
		errs = append(errs, fmt.Errorf("--apps %d: must be positive", fl.apps))
	}
	if fl.tick <= 0 {
		errs = append(errs, fmt.Errorf("--tick %s: must be positive", fl.tick))
	}
	if fl.step < time.Second {
		errs = append(errs, fmt.Errorf("--step %s: must be at least 1s", fl.step))
	}
	if fl.addr == "" {
		errs = append(errs, errors.New("--addr: an address is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = fl.kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	apps, err := generatePool(prof, fl.poolSeed, fl.apps)
	if err != nil {
		return err
	}
	simApps, shapes, err := simulate(apps, fl.traces, fl.step, fl.seed)
	if err != nil {
		return err
	}
	log := slog.Default()
	log.Info("twin: applications", "apps", len(simApps), "pool-seed", fl.poolSeed, "shapes", shapes.Origin,
		"speed-up", fmt.Sprintf("%.3gx", fl.step.Seconds()/fl.tick.Seconds()))
	tw, err := twin.New(client, simApps, prof,
		twin.WithNamespace(fl.namespace), twin.WithSelector(fl.selector), twin.WithAddr(fl.addr),
		twin.WithTick(fl.tick), twin.WithSimStep(fl.step), twin.WithSeed(fl.seed), twin.WithLogger(log))
	if err != nil {
		return err
	}
	return tw.Run(ctx)
}
