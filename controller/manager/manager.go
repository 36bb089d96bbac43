package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/aware-autoscaler/aware/controller/admission"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
	"github.com/aware-autoscaler/aware/controller/target"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;create;update;delete

// LeaderElectionID is the Lease the controller replicas compete for.
const LeaderElectionID = "aware-controller.autoscaling.aware.dev"

// FieldOwner is the field manager of the controller's writes (MPA status,
// scale, resizes), whatever the binary is called.
const FieldOwner = "aware-controller"

// Webhook configures the admission webhook.
type Webhook struct {
	// Enabled turns the webhook on.
	Enabled bool
	// Host and Port are where it listens (default 0.0.0.0:9443).
	Host string
	Port int
	// CertDir holds (or receives generated) tls.crt, tls.key and ca.crt.
	CertDir string
	// Hosts are the names in the generated certificate (the Service's DNS
	// name, or 127.0.0.1 for a controller outside the cluster).
	Hosts []string
	// Endpoint tells the API server how to reach the webhook.
	Endpoint admission.Endpoint
	// FailurePolicy is Ignore (fail open, default) or Fail.
	FailurePolicy admissionregistrationv1.FailurePolicyType
}

// Config is the controller's configuration.
type Config struct {
	REST *rest.Config
	// Namespace limits the controller to one namespace ("" = all).
	Namespace string
	// Step is the step interval; Concurrency the MPAs reconciled at once;
	// ActuationConcurrency the MPAs whose decisions are applied at once.
	Step                 time.Duration
	Concurrency          int
	ActuationConcurrency int
	// VPARecommenderInterval is how often the built-in VPA recomputes its
	// recommendation: 0 is upstream's 1 min, a negative value every step.
	VPARecommenderInterval time.Duration
	// TimeScale is simulated seconds per wall second (0: 1): on a digital
	// twin (the local testbed) the recommenders' windows run in the
	// twin's time (autoscaler.WithTimeScale); 1 on a real cluster.
	TimeScale float64
	// CheckpointEvery is how many steps apart each MPA's built-in
	// recommender is written to its MultidimPodAutoscalerCheckpoint (0:
	// DefaultCheckpointEvery; negative: never, and none is restored).
	CheckpointEvery int
	// MetricsAddr serves /metrics ("0" disables); ProbeAddr /healthz and
	// /readyz ("0" disables).
	MetricsAddr string
	// Profiling serves Go's net/http/pprof under /debug/pprof/ on the
	// metrics address.
	Profiling bool
	ProbeAddr string
	// LeaderElection makes one replica act at a time.
	LeaderElection          bool
	LeaderElectionNamespace string
	// Shard shares the MPAs among every replica run with it (exclusive
	// with LeaderElection).
	Shard    Shard
	Webhook  Webhook
	Observer autoscaler.Observer
	// ServeSnapshots serves the observer's snapshots at SnapshotPath on
	// the metrics address, when the observer is a SnapshotObserver, so
	// that `aware agents --snapshots-from` observes without querying
	// Prometheus again.
	ServeSnapshots bool
	// Store receives trajectories (nil: none are recorded).
	Store autoscaler.Trajectories
	Log   *slog.Logger
}

// Shard configures sharing the MPAs among replicas (controller/shard).
type Shard struct {
	Enabled bool
	// Namespace holds the replicas' Leases (default: the in-cluster
	// namespace).
	Namespace string
	// Identity names this replica and its Lease (default: the host name
	// and a random suffix, so that a restarted replica joins afresh).
	Identity string
	// Group is the set of replicas sharing MPAs (default
	// shard.DefaultGroup).
	Group string
	// LeaseDuration is how long a Lease renewal holds (default: half the
	// step, in whole seconds).
	LeaseDuration time.Duration
}

// DefaultCheckpointEvery writes each MPA's recommender every 4 steps (a
// minute at the default 15 s step, upstream VPA's checkpoint cadence).
const DefaultCheckpointEvery = 4

// Scheme is the controller's scheme: client-go's types and the MPA.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), v1alpha1.AddToScheme(s)); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs the controller until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.REST == nil || cfg.Observer == nil {
		return errors.New("controller: a REST config and an observer are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Step == 0 {
		cfg.Step = 15 * time.Second
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 8
	}
	if cfg.ActuationConcurrency == 0 {
		cfg.ActuationConcurrency = 8
	}
	switch {
	case cfg.VPARecommenderInterval == 0:
		cfg.VPARecommenderInterval = vpa.DefaultRecommenderInterval
	case cfg.VPARecommenderInterval < 0:
		cfg.VPARecommenderInterval = 0
	}
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 1
	}
	switch {
	case cfg.CheckpointEvery == 0:
		cfg.CheckpointEvery = DefaultCheckpointEvery
	case cfg.CheckpointEvery < 0:
		cfg.CheckpointEvery = 0
	}
	if cfg.Shard.Enabled && cfg.LeaderElection {
		return errors.New("controller: sharding and leader election exclude each other (a leader drives every MPA)")
	}
	logger := logr.FromSlogHandler(cfg.Log.Handler())
	ctrl.SetLogger(logger)
	crlog.SetLogger(logger)
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	opts := ctrl.Options{
		Scheme:                        scheme,
		Logger:                        logger,
		Metrics:                       metricsserver.Options{BindAddress: cmp.Or(cfg.MetricsAddr, "0"), ExtraHandlers: extraHandlers(cfg)},
		HealthProbeBindAddress:        cmp.Or(cfg.ProbeAddr, "0"),
		LeaderElection:                cfg.LeaderElection,
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       cfg.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
	}
	// Nothing reads the objects' managedFields: the cache leaves them out
	// (a pod's are about a fifth of its cached size).
	opts.Cache = cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if cfg.Namespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{cfg.Namespace: {}}
	}
	wh := cfg.Webhook
	var rotator *admission.Rotator
	if wh.Enabled {
		if wh.Port == 0 {
			wh.Port = 9443
		}
		if wh.FailurePolicy == "" {
			wh.FailurePolicy = admissionregistrationv1.Ignore
		}
		ca, err := admission.EnsureCerts(wh.CertDir, wh.Hosts, time.Now())
		if err != nil {
			return err
		}
		direct, err := client.New(cfg.REST, client.Options{Scheme: scheme})
		if err != nil {
			return err
		}
		if err := admission.EnsureConfiguration(ctx, direct, wh.Endpoint, ca, wh.FailurePolicy); err != nil {
			return err
		}
		rotator = &admission.Rotator{Dir: wh.CertDir, Hosts: wh.Hosts, Log: cfg.Log,
			Publish: func(ctx context.Context, bundle []byte) error {
				return admission.EnsureConfiguration(ctx, direct, wh.Endpoint, bundle, wh.FailurePolicy)
			}}
		opts.WebhookServer = webhook.NewServer(webhook.Options{Host: wh.Host, Port: wh.Port, CertDir: wh.CertDir})
	}
	mgr, err := ctrl.NewManager(cfg.REST, opts)
	if err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	if err := target.IndexPods(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	recOpts := []autoscaler.Option{autoscaler.WithPodIndex()}
	if cfg.Shard.Enabled {
		member, err := newMembership(cfg, scheme)
		if err != nil {
			return err
		}
		if err := mgr.Add(member); err != nil {
			return err
		}
		recOpts = append(recOpts, autoscaler.WithShard(member))
	}
	rec, err := autoscaler.New(client.WithFieldOwner(mgr.GetClient(), FieldOwner), cfg.Observer, cfg.Store,
		append(recOpts, autoscaler.WithStep(cfg.Step), autoscaler.WithConcurrency(cfg.Concurrency),
			autoscaler.WithActuationConcurrency(cfg.ActuationConcurrency), autoscaler.WithLogger(cfg.Log),
			autoscaler.WithVPARecommenderInterval(cfg.VPARecommenderInterval), autoscaler.WithTimeScale(cfg.TimeScale),
			autoscaler.WithCheckpoints(mgr.GetAPIReader(), cfg.CheckpointEvery),
			autoscaler.WithMetrics(autoscaler.NewMetrics(metrics.Registry)),
			autoscaler.WithRecorder(mgr.GetEventRecorderFor("aware-controller")))...)
	if err != nil {
		return err
	}
	if err := rec.SetupWithManager(mgr); err != nil {
		return err
	}
	if wh.Enabled {
		if err := mgr.Add(rotator); err != nil {
			return err
		}
		mgr.GetWebhookServer().Register(admission.Path, &webhook.Admission{Handler: admission.NewPodMutator(mgr.GetClient(), cfg.Log)})
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	cfg.Log.Info("controller starting", "namespace", cfg.Namespace, "step", cfg.Step, "timeScale", cfg.TimeScale, "leaderElection", cfg.LeaderElection, "shard", cfg.Shard.Enabled,
		"webhook", wh.Enabled, "webhookAddr", net.JoinHostPort(wh.Host, strconv.Itoa(wh.Port)))
	err = mgr.Start(ctx)
	// The manager has stopped the controllers: write the checkpoints of
	// what stepped since its last one, so that a replacement (a rolling
	// update, another replica) goes on from the last step.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	start := time.Now()
	n, ferr := rec.FlushCheckpoints(fctx)
	if ferr != nil {
		cfg.Log.Warn("checkpoints not all written at shutdown; those MPAs keep their last periodic one", "written", n, "err", ferr)
	} else if n > 0 {
		cfg.Log.Info("checkpoints written at shutdown", "written", n, "took", time.Since(start).Round(time.Millisecond))
	}
	return err
}

// flushTimeout bounds the checkpoint flush at shutdown, well inside a pod's
// default 30 s termination grace period.
const flushTimeout = 10 * time.Second

// ProfilingHandlers are net/http/pprof's handlers by path, for a metrics
// server's extra handlers.
func ProfilingHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// extraHandlers are the metrics address's handlers besides /metrics:
// net/http/pprof's with Profiling, the observer's snapshots with
// ServeSnapshots.
func extraHandlers(cfg Config) map[string]http.Handler {
	h := map[string]http.Handler{}
	if cfg.Profiling {
		maps.Copy(h, ProfilingHandlers())
	}
	if o, ok := cfg.Observer.(*SnapshotObserver); ok && cfg.ServeSnapshots {
		h[SnapshotPath] = o
	}
	return h
}
