package mpaenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/telemetry"
	"github.com/aware-autoscaler/aware/gym"
)

// ClusterConfig selects the MPAs of a cluster to drive as environments
// (`aware env serve --cluster`). Validate's errors name the command's flags.
type ClusterConfig struct {
	Prometheus string        // Prometheus base URL (required)
	Namespace  string        // of the MPAs
	MPAs       []string      // default: every MPA of Namespace with an external recommender
	Step       time.Duration // the controller's step
	Episode    int           // steps per episode (0: no truncation)
	Actuation  time.Duration // WithActuationTimeout (0: the default)
	Pickup     time.Duration // WithPickupTimeout (0: the default)
}

// Validate reports every invalid field.
func (c ClusterConfig) Validate() error {
	var errs []error
	if c.Prometheus == "" {
		errs = append(errs, errors.New("--prometheus: a Prometheus URL is required with --cluster"))
	}
	if c.Step <= 0 {
		errs = append(errs, fmt.Errorf("--step %s: must be positive (the controller's --step)", c.Step))
	}
	if c.Episode < 0 {
		errs = append(errs, fmt.Errorf("--episode %d: must be positive", c.Episode))
	}
	if c.Actuation < 0 {
		errs = append(errs, fmt.Errorf("--actuation-timeout %s: must be positive", c.Actuation))
	}
	if c.Pickup < 0 {
		errs = append(errs, fmt.Errorf("--pickup-timeout %s: must be positive", c.Pickup))
	}
	return errors.Join(errs...)
}

// ClusterEnvs builds an environment per selected MPA, sharing one
// Prometheus observer (one snapshot per step, as in the controller).
// restConfig loads the cluster's REST config once cfg is valid.
func ClusterEnvs(ctx context.Context, cfg ClusterConfig, restConfig func() (*rest.Config, error), log *slog.Logger) (map[string]gym.Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rc, err := restConfig()
	if err != nil {
		return nil, err
	}
	scheme, err := manager.Scheme()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	src, err := telemetry.New(cfg.Prometheus, telemetry.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("--prometheus: %w", err)
	}
	obs := manager.NewSnapshotObserver(src)
	names := cfg.MPAs
	if len(names) == 0 {
		var list v1alpha1.MultidimPodAutoscalerList
		if err := cl.List(ctx, &list, client.InNamespace(cfg.Namespace)); err != nil {
			return nil, fmt.Errorf("MPAs of namespace %s: %w", cfg.Namespace, err)
		}
		for i := range list.Items {
			if p, err := autoscaler.PolicyOf(&list.Items[i]); err == nil && p.External() {
				names = append(names, list.Items[i].Name)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("no MPA of namespace %s names an external recommender in spec.recommenders (of %d MPAs); name MPAs with --mpa", cfg.Namespace, len(list.Items))
		}
	}
	opts := []Option{WithStep(cfg.Step), WithLogger(log)}
	if cfg.Episode > 0 {
		opts = append(opts, WithEpisode(cfg.Episode))
	}
	if cfg.Actuation > 0 {
		opts = append(opts, WithActuationTimeout(cfg.Actuation))
	}
	if cfg.Pickup > 0 {
		opts = append(opts, WithPickupTimeout(cfg.Pickup))
	}
	envs := make(map[string]gym.Env, len(names))
	for _, n := range names {
		if _, dup := envs[n]; dup {
			return nil, fmt.Errorf("--mpa %s is given twice", n)
		}
		e, err := New(ctx, cl, types.NamespacedName{Namespace: cfg.Namespace, Name: n}, obs, opts...)
		if err != nil {
			return nil, err
		}
		envs[n] = e
	}
	return envs, nil
}
