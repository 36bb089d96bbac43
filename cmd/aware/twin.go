package main

import (
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
	"github.com/aware-autoscaler/aware/workloads/twin"
)

// newTwinCmd is `aware twin`: the digital twin of the generated pool on a
// cluster whose pods do no work.
func newTwinCmd() *cobra.Command {
	var (
		cfg    twin.PoolConfig
		traces string
	)
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
the first --apps of the pool of --pool-seed, with load shapes from --traces (the shipped or
fitted shapes where a file is absent), exactly as ` + "`aware generate`" + ` and the simulator build them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pool := func(prof *calibration.Profile, n int, step time.Duration, seed uint64) ([]sim.App, map[string]string, error) {
				apps, err := generator.FirstApps(prof, cfg.PoolSeed, n)
				if err != nil {
					return nil, nil, err
				}
				simApps, shapes, err := generator.Simulated(apps, traces, step, seed)
				return simApps, shapes.Origin, err
			}
			return twin.RunPool(cmd.Context(), cfg, pool, slog.Default())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, then ~/.kube/config)")
	f.IntVar(&cfg.Apps, "apps", 1000, "applications of the generated pool to simulate (the first N)")
	f.Int64Var(&cfg.PoolSeed, "pool-seed", 1, "seed of the generated pool")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the synthetic load shapes and the simulator's noise")
	f.StringVar(&cfg.Namespace, "namespace", "", "namespace of the applications (default: all namespaces)")
	f.StringVar(&cfg.Selector, "selector", twin.DefaultSelector, "label selector of the applications' Deployments and Pods")
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:9400", "address of the metrics endpoint")
	f.DurationVar(&cfg.Tick, "tick", time.Second, "wall-clock time per simulator step")
	f.DurationVar(&cfg.Step, "step", 10*time.Second, "simulated time per step (and the load shapes' step)")
	tracesFlag(f, &traces)
	return cmd
}
