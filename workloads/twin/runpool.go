package twin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// PoolConfig is the twin of a generated pool on a cluster (`aware twin`).
// Validate's errors name the command's flags.
type PoolConfig struct {
	Kubeconfig string        // "": $KUBECONFIG, then ~/.kube/config
	Apps       int           // applications of the pool to simulate (the first N)
	PoolSeed   int64         // seed of the pool (for the log)
	Seed       uint64        // of the load shapes and the simulator's noise
	Namespace  string        // "": all namespaces
	Selector   string        // of the applications' Deployments and Pods
	Addr       string        // of the metrics endpoint
	Tick       time.Duration // wall-clock time per simulator step
	Step       time.Duration // simulated time per step
}

// Validate reports every invalid field.
func (c PoolConfig) Validate() error {
	var errs []error
	if c.Apps < 1 {
		errs = append(errs, fmt.Errorf("--apps %d: must be positive", c.Apps))
	}
	if c.Tick <= 0 {
		errs = append(errs, fmt.Errorf("--tick %s: must be positive", c.Tick))
	}
	if c.Step < time.Second {
		errs = append(errs, fmt.Errorf("--step %s: must be at least 1s", c.Step))
	}
	if c.Addr == "" {
		errs = append(errs, errors.New("--addr: an address is required"))
	}
	return errors.Join(errs...)
}

// Pool gives the first n applications of the pool in their simulator form
// at step, and where each load shape came from (generator.FirstApps and
// generator.Simulated).
type Pool func(prof *calibration.Profile, n int, step time.Duration, seed uint64) ([]sim.App, map[string]string, error)

// RunPool connects to the cluster of cfg.Kubeconfig and runs the twin of
// the pool's first cfg.Apps applications until ctx is cancelled.
func RunPool(ctx context.Context, cfg PoolConfig, pool Pool, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = cfg.Kubeconfig
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
	simApps, origin, err := pool(prof, cfg.Apps, cfg.Step, cfg.Seed)
	if err != nil {
		return err
	}
	log.Info("twin: applications", "apps", len(simApps), "pool-seed", cfg.PoolSeed, "shapes", origin,
		"speed-up", fmt.Sprintf("%.3gx", cfg.Step.Seconds()/cfg.Tick.Seconds()))
	tw, err := New(client, simApps, prof,
		WithNamespace(cfg.Namespace), WithSelector(cfg.Selector), WithAddr(cfg.Addr),
		WithTick(cfg.Tick), WithSimStep(cfg.Step), WithSeed(cfg.Seed), WithLogger(log))
	if err != nil {
		return err
	}
	return tw.Run(ctx)
}
