package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/aware-autoscaler/aware/controller/admission"
	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
	"github.com/aware-autoscaler/aware/controller/shard"
	"github.com/aware-autoscaler/aware/controller/trajectory"
)

type controllerFlags struct {
	kubeconfig    string
	cfg           manager.Config
	src           manager.Sources
	webhookURL    string
	webhookSvc    string
	webhookHosts  []string
	failurePolicy string
	vpaInterval   time.Duration
	qps           float32
	burst         int
}

// defaultStoreMaxBytes bounds the embedded trajectory store: at about 200
// bytes a step it holds some 40 million steps, a year of 15-second steps
// for a hundred MPAs.
const defaultStoreMaxBytes = 8 << 30

func newControllerCmd() *cobra.Command {
	fl := controllerFlags{src: manager.Sources{StoreMaxBytes: defaultStoreMaxBytes}}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the MultidimPodAutoscaler controller (recommender, updater, admission webhook)",
		Long: `Runs the MPA controller against the cluster of --kubeconfig (or in-cluster config): once per
--step it observes every MPA's target through Prometheus, recommends (HPA+VPA, a recommender
registered in this binary with autoscaler.RegisterRecommender when the MPA names one, or the
recommendation an external agent wrote), records trajectories (embedded store in --store-dir,
or InfluxDB with --influx-url, spooled locally while InfluxDB is down), and actuates replicas
through the scale subresource and resources in place (pods/resize), falling back to a rolling
update. Its own metrics are on --metrics-addr, and so are the Prometheus snapshots it takes
(one per round), from which ` + "`aware agents --snapshots-from`" + ` observes instead of querying
Prometheus again (--serve-snapshots).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(cmd.Context(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.kubeconfig, "kubeconfig", "", "kubeconfig (default $KUBECONFIG, then in-cluster)")
	f.StringVar(&fl.cfg.Namespace, "namespace", "", "watch one namespace only (default all)")
	f.DurationVar(&fl.cfg.Step, "step", 15*time.Second, "step interval: one recommendation per MPA per step")
	f.IntVar(&fl.cfg.Concurrency, "concurrency", 8, "MPAs reconciled at once")
	f.DurationVar(&fl.vpaInterval, "vpa-recommender-interval", vpa.DefaultRecommenderInterval, "how often the built-in VPA recomputes its recommendation (upstream --recommender-interval); 0: at every step")
	f.Float64Var(&fl.cfg.TimeScale, "time-scale", 1, "simulated seconds per wall second: on a digital twin (the local testbed) the recommenders' windows run in the twin's time; 1 on a real cluster")
	f.IntVar(&fl.cfg.CheckpointEvery, "checkpoint-every", manager.DefaultCheckpointEvery, "steps between writes of each MPA's recommender (VPA histograms, HPA windows) to its MultidimPodAutoscalerCheckpoint, restored after a restart; negative: none")
	f.IntVar(&fl.cfg.ActuationConcurrency, "actuation-concurrency", 8, "MPAs whose decisions are applied at once (by the updater, after the recommendation is written)")
	f.StringVar(&fl.cfg.MetricsAddr, "metrics-addr", ":8080", `address of /metrics ("0" disables)`)
	f.StringVar(&fl.cfg.ProbeAddr, "probe-addr", ":8081", `address of /healthz and /readyz ("0" disables)`)
	f.BoolVar(&fl.cfg.Profiling, "pprof", false, "serve Go's profiles under /debug/pprof/ on --metrics-addr")
	f.BoolVar(&fl.cfg.ServeSnapshots, "serve-snapshots", true, "serve each round's Prometheus snapshot on --metrics-addr at "+manager.SnapshotPath+", for aware agents --snapshots-from")
	f.BoolVar(&fl.cfg.LeaderElection, "leader-elect", false, "elect one active replica (Lease "+manager.LeaderElectionID+")")
	f.StringVar(&fl.cfg.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease (default: the in-cluster namespace)")
	f.BoolVar(&fl.cfg.Shard.Enabled, "shard", false, "share the MPAs among all replicas run with --shard: each holds a Lease, and rendezvous hashing of MPA UIDs over the live ones gives each MPA one replica per round (excludes --leader-elect)")
	f.StringVar(&fl.cfg.Shard.Namespace, "shard-namespace", "", "namespace of the replicas' Leases (default: the in-cluster namespace)")
	f.StringVar(&fl.cfg.Shard.Identity, "shard-identity", "", "this replica's name and its Lease's (default: the host name and a random suffix)")
	f.StringVar(&fl.cfg.Shard.Group, "shard-group", "", "the replicas sharing MPAs (default "+shard.DefaultGroup+")")
	f.DurationVar(&fl.cfg.Shard.LeaseDuration, "shard-lease-duration", 0, "how long a replica's Lease renewal holds, whole seconds (default: half the step); a dead replica's MPAs are taken over in the first round after it lapsed")
	f.StringVar(&fl.src.PrometheusURL, "prometheus", "", "Prometheus base URL (required)")
	f.StringVar(&fl.src.StoreDir, "store-dir", "out/trajectories", "embedded trajectory store, or the InfluxDB spool")
	f.Var(byteSize{&fl.src.StoreMaxBytes}, "store-max-bytes", "bound on the embedded store's disk, e.g. 8Gi: the oldest episodes are dropped past it (episodes in progress are kept); 0: none")
	f.DurationVar(&fl.src.StoreMaxAge, "store-max-age", 0, "drop the embedded store's episodes older than this (step time), e.g. 720h; 0: keep all")
	f.StringVar(&fl.src.InfluxURL, "influx-url", "", "InfluxDB 1.x URL for trajectories (default: the embedded store)")
	f.StringVar(&fl.src.InfluxDB, "influx-db", "aware", "InfluxDB database")
	f.BoolVar(&fl.cfg.Webhook.Enabled, "webhook", false, "serve the admission webhook that sizes new pods")
	f.StringVar(&fl.cfg.Webhook.Host, "webhook-host", "", "webhook listen host (default all)")
	f.IntVar(&fl.cfg.Webhook.Port, "webhook-port", 9443, "webhook listen port")
	f.StringVar(&fl.cfg.Webhook.CertDir, "webhook-cert-dir", "out/webhook-certs", "webhook certificate directory (generated if absent)")
	f.StringVar(&fl.webhookURL, "webhook-url", "", "URL the API server calls, e.g. https://127.0.0.1:9443 (controller outside the cluster)")
	f.StringVar(&fl.webhookSvc, "webhook-service", "", "namespace/name of the webhook's Service (controller in the cluster)")
	f.StringSliceVar(&fl.webhookHosts, "webhook-cert-hosts", nil, "names in the generated certificate (default from --webhook-url or --webhook-service)")
	f.StringVar(&fl.failurePolicy, "webhook-failure-policy", "Ignore", "Ignore: admit pods unchanged when the webhook is down (fail open); Fail: refuse them")
	f.Float32Var(&fl.qps, "kube-api-qps", 200, "client QPS to the API server")
	f.IntVar(&fl.burst, "kube-api-burst", 400, "client burst to the API server")
	return cmd
}

// byteSize is a flag of bytes written as a Kubernetes quantity (8Gi,
// 500M, 0).
type byteSize struct{ n *int64 }

func (b byteSize) String() string {
	if b.n == nil {
		return "0"
	}
	return resource.NewQuantity(*b.n, resource.BinarySI).String()
}

func (b byteSize) Set(v string) error {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return fmt.Errorf("%q is not a size such as 8Gi or 500M", v)
	}
	n, ok := q.AsInt64()
	if !ok || n < 0 {
		return fmt.Errorf("%q: need a whole number of bytes from 0 to 8Ei", v)
	}
	*b.n = n
	return nil
}

func (byteSize) Type() string { return "bytes" }

func runController(ctx context.Context, fl controllerFlags) error {
	var errs []error
	switch fl.failurePolicy {
	case "Ignore", "Fail":
		fl.cfg.Webhook.FailurePolicy = admissionregistrationv1.FailurePolicyType(fl.failurePolicy)
	default:
		errs = append(errs, fmt.Errorf("--webhook-failure-policy: %q is not Ignore or Fail", fl.failurePolicy))
	}
	if n := fl.src.StoreMaxBytes; n != 0 && n < 2*trajectory.DefaultSegmentSize {
		errs = append(errs, fmt.Errorf("--store-max-bytes %s: must be 0 (no bound) or at least %s (two segments of the store)",
			byteSize{&n}, resource.NewQuantity(2*trajectory.DefaultSegmentSize, resource.BinarySI)))
	}
	switch {
	case fl.vpaInterval < 0:
		errs = append(errs, fmt.Errorf("--vpa-recommender-interval %v: must be non-negative", fl.vpaInterval))
	case fl.vpaInterval == 0:
		fl.cfg.VPARecommenderInterval = -1 // every step
	default:
		fl.cfg.VPARecommenderInterval = fl.vpaInterval
	}
	if k := fl.cfg.TimeScale; !(k >= 1) || math.IsInf(k, 0) {
		errs = append(errs, fmt.Errorf("--time-scale %g: want a finite number of simulated seconds per wall second, at least 1", k))
	}
	if fl.cfg.Webhook.Enabled {
		switch {
		case fl.webhookURL != "" && fl.webhookSvc != "":
			errs = append(errs, errors.New("--webhook-url and --webhook-service exclude each other"))
		case fl.webhookURL != "":
			if !strings.HasPrefix(fl.webhookURL, "https://") {
				errs = append(errs, fmt.Errorf("--webhook-url %q: must be https://", fl.webhookURL))
			}
			fl.cfg.Webhook.Endpoint = admission.Endpoint{URL: strings.TrimSuffix(fl.webhookURL, "/")}
			if len(fl.webhookHosts) == 0 {
				host := strings.TrimPrefix(fl.webhookURL, "https://")
				host, _, _ = strings.Cut(host, "/")
				if h, _, ok := strings.Cut(host, ":"); ok {
					host = h
				}
				fl.webhookHosts = []string{host}
			}
		case fl.webhookSvc != "":
			ns, name, ok := strings.Cut(fl.webhookSvc, "/")
			if !ok || ns == "" || name == "" {
				errs = append(errs, fmt.Errorf("--webhook-service %q: want namespace/name", fl.webhookSvc))
			}
			fl.cfg.Webhook.Endpoint = admission.Endpoint{ServiceNamespace: ns, ServiceName: name}
			if len(fl.webhookHosts) == 0 {
				fl.webhookHosts = []string{name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local"}
			}
		default:
			errs = append(errs, errors.New("--webhook needs --webhook-url or --webhook-service"))
		}
		fl.cfg.Webhook.Hosts = fl.webhookHosts
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	rc, err := loadRESTConfig(fl.kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = fl.qps, fl.burst
	fl.cfg.REST = rc
	fl.cfg.Log = slog.Default()
	if fl.cfg.Step > 0 { // else the manager refuses it, or takes its default
		fl.src.QueryTimeout = fl.cfg.Step
	}
	obs, store, err := fl.src.Open(ctx, fl.cfg.Log, manager.WithObserverMetrics(crmetrics.Registry))
	if err != nil {
		return err
	}
	fl.cfg.Observer, fl.cfg.Store = obs, store
	runErr := manager.Run(ctx, fl.cfg)
	// Deliver (or durably spool) what the last steps recorded.
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return errors.Join(runErr, store.Flush(flushCtx), store.Close())
}

func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("no kubeconfig: %w", err)
	}
	return c, nil
}
