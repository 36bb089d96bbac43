package agents

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/mpaenv"
	"github.com/aware-autoscaler/aware/controller/target"
	"github.com/aware-autoscaler/aware/controller/telemetry"
	"github.com/aware-autoscaler/aware/controller/trajectory"
)

// FieldOwner is the field manager of the runner's status writes.
const FieldOwner = "aware-agents"

// Config is `aware agents`: the runner as its own process.
type Config struct {
	REST *rest.Config
	// Namespace restricts the runner to one namespace ("" = all).
	Namespace string
	// PrometheusURL is where the targets' metrics are read, as the
	// controller reads them.
	PrometheusURL string
	// SnapshotsFrom, when set, is the controller's metrics address: the
	// runner then observes from the Prometheus snapshots the controller
	// serves there (one per round for both) and queries PrometheusURL
	// only when the controller does not answer.
	SnapshotsFrom string
	// InfluxURL and InfluxDB locate the controller's trajectory store. The
	// runner is its own process and the embedded store is the
	// controller's alone (one process holds its directory), so a runner
	// needs the InfluxDB store.
	InfluxURL, InfluxDB string
	// Dir holds the checkpoints (Dir/checkpoints) and the store's spool
	// (Dir/spool).
	Dir         string
	MetricsAddr string
	// Profiling serves Go's net/http/pprof under /debug/pprof/ on the
	// metrics address.
	Profiling bool
	ProbeAddr string
	Log       *slog.Logger
	Options   []Option
}

// Run runs the runner until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	var errs []error
	if cfg.REST == nil {
		errs = append(errs, errors.New("a REST config is required"))
	}
	if cfg.PrometheusURL == "" {
		errs = append(errs, errors.New("a Prometheus URL is required (--prometheus)"))
	}
	if cfg.InfluxURL == "" {
		errs = append(errs, errors.New("the controller's InfluxDB trajectory store is required (--influx-url): the embedded store belongs to the controller process"))
	}
	if cfg.Dir == "" {
		errs = append(errs, errors.New("a directory for checkpoints is required (--dir)"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	logger := logr.FromSlogHandler(cfg.Log.Handler())
	ctrl.SetLogger(logger)
	crlog.SetLogger(logger)
	scheme, err := manager.Scheme()
	if err != nil {
		return err
	}
	opts := ctrl.Options{
		Scheme: scheme, Logger: logger,
		Metrics:                metricsserver.Options{BindAddress: cmp.Or(cfg.MetricsAddr, "0")},
		HealthProbeBindAddress: cmp.Or(cfg.ProbeAddr, "0"),
	}
	if cfg.Profiling {
		opts.Metrics.ExtraHandlers = manager.ProfilingHandlers()
	}
	// Nothing reads the objects' managedFields: the cache leaves them out
	// (a pod's are about a fifth of its cached size).
	opts.Cache = cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if cfg.Namespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{cfg.Namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg.REST, opts)
	if err != nil {
		return fmt.Errorf("agents: manager: %w", err)
	}
	prom, err := telemetry.New(cfg.PrometheusURL, telemetry.WithLogger(cfg.Log))
	if err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	var src telemetry.Snapshotter = prom
	if cfg.SnapshotsFrom != "" {
		if src, err = manager.NewRemoteSnapshots(cfg.SnapshotsFrom, prom, manager.WithRemoteLogger(cfg.Log),
			manager.WithRemoteMetrics(crmetrics.Registry)); err != nil {
			return fmt.Errorf("agents: %w", err)
		}
	}
	storeOpts := []trajectory.Option{trajectory.WithLogger(cfg.Log)}
	if cfg.InfluxDB != "" {
		storeOpts = append(storeOpts, trajectory.WithDatabase(cfg.InfluxDB))
	}
	store, err := trajectory.OpenInflux(ctx, cfg.InfluxURL, filepath.Join(cfg.Dir, "spool"), storeOpts...)
	if err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	defer store.Close()
	if err := target.IndexPods(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	ropts := append([]Option{WithLogger(cfg.Log), WithRegisterer(crmetrics.Registry), WithRecorder(mgr.GetEventRecorderFor(FieldOwner)),
		WithEnvOptions(mpaenv.WithPodIndex())}, cfg.Options...)
	r, err := New(client.WithFieldOwner(mgr.GetClient(), FieldOwner), manager.NewSnapshotObserver(src, manager.WithObserverMetrics(crmetrics.Registry)), store, filepath.Join(cfg.Dir, "checkpoints"), ropts...)
	if err != nil {
		return err
	}
	if err := mgr.Add(r); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	cfg.Log.Info("agent runner starting", "namespace", cfg.Namespace, "snapshotsFrom", cfg.SnapshotsFrom, "recommender", r.cfg.name, "step", r.cfg.step, "timeScale", r.cfg.timeScale, "trainers", r.cfg.trainers, "dir", cfg.Dir)
	return mgr.Start(ctx)
}
