package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/infra/influxdb"
	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/infra/prometheus"
	"github.com/aware-autoscaler/aware/internal/atomicfile"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/twin"
)

// Config is what the supervisor runs.
type Config struct {
	// Dir holds the supervisor's state: logs, Prometheus's and InfluxDB's
	// data, the trajectory spool, the webhook's certificate and
	// endpoints.json.
	Dir string
	// ClusterDir is the local control plane's directory (`aware cluster
	// up --dir`); the cluster must be running.
	ClusterDir string
	// Aware is the aware binary the controller and agent runner run from.
	Aware string
	// Apps of the pool of PoolSeed, chosen by SelectSeed
	// (generator.Select), in AppsNamespace.
	Apps          int
	PoolSeed      int64
	SelectSeed    uint64
	Namespace     string
	AppsNamespace string
	// Step is the controller's step.
	Step time.Duration
	// Agents runs the agent runner; Webhook serves the admission webhook.
	Agents, Webhook bool
	// Traces is the folder of real traces (generator.LoadShapes).
	Traces string
	// Seed of the twin's load shapes and noise.
	Seed uint64
	Log  *slog.Logger
}

// Endpoints are what a running supervisor serves, written to
// Dir/endpoints.json once everything is up.
type Endpoints struct {
	Pid        int    `json:"pid"`
	Prometheus string `json:"prometheus"`
	InfluxDB   string `json:"influxdb"`
	Twin       string `json:"twin"`
	Controller string `json:"controller"`       // its /metrics
	Agents     string `json:"agents,omitempty"` // the runner's /metrics
}

// EndpointsFile is the name of the endpoints file in Config.Dir.
const EndpointsFile = "endpoints.json"

// Names of the service accounts the controller and agent runner act as
// (the testbed's RBAC binds them).
const (
	ControllerAccount = "aware-controller"
	AgentsAccount     = "aware-agents"
)

// twinStep is the simulated time per twin tick (1 s wall clock), as in the
// controller benchmark.
const twinStep = 10 * time.Second

// Run starts everything of cfg, writes the endpoints and runs until ctx
// ends, then stops it all in reverse order.
func Run(ctx context.Context, cfg Config) (err error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			err = errors.Join(err, stops[i]())
		}
	}()
	cl, err := cluster.Attach(ctx, cfg.ClusterDir)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}

	// The twin, serving its series in shards.
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	apps, err := generator.GenerateSelected(prof, cfg.PoolSeed, cfg.Apps, cfg.SelectSeed)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	simApps, _, err := generator.Simulated(apps, cfg.Traces, twinStep, cfg.Seed)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	tw, err := twin.New(cs, simApps, prof, twin.WithNamespace(cfg.AppsNamespace), twin.WithSimStep(twinStep),
		twin.WithSeed(cfg.Seed), twin.WithLogger(log))
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("local: twin metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", tw.Handler())
	scrape, err := tw.MountShards(mux, ln.Addr().String())
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stops = append(stops, func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
	twinCtx, stopTwin := context.WithCancel(context.WithoutCancel(ctx))
	twinDone := make(chan error, 1)
	go func() { twinDone <- tw.Run(twinCtx) }()
	stops = append(stops, func() error {
		stopTwin()
		if err := <-twinDone; err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	})

	prom, err := prometheus.Start(ctx, filepath.Join(cfg.Dir, "prometheus"), prometheus.WithScrapeConfigYAML(scrape),
		prometheus.WithLogger(log))
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	stops = append(stops, prom.Stop)
	influx, err := influxdb.Start(ctx, filepath.Join(cfg.Dir, "influxdb"))
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	stops = append(stops, influx.Stop)

	ep := Endpoints{Pid: os.Getpid(), Prometheus: prom.URL(), InfluxDB: influx.URL(), Twin: "http://" + ln.Addr().String() + "/metrics"}
	kc, err := cl.UserKubeconfig("controller", "system:serviceaccount:"+cfg.Namespace+":"+ControllerAccount)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	args := []string{"controller", "--kubeconfig=" + kc, "--prometheus=" + prom.URL(), "--influx-url=" + influx.URL(),
		"--store-dir=" + filepath.Join(cfg.Dir, "spool"), "--step=" + cfg.Step.String()}
	if cfg.Webhook {
		port, err := localproc.FreePort()
		if err != nil {
			return fmt.Errorf("local: %w", err)
		}
		args = append(args, "--webhook", "--webhook-host=127.0.0.1", fmt.Sprintf("--webhook-port=%d", port),
			fmt.Sprintf("--webhook-url=https://127.0.0.1:%d", port), "--webhook-cert-dir="+filepath.Join(cfg.Dir, "webhook-certs"))
	}
	ctl, url, err := startChild(ctx, cfg, "controller", args)
	if err != nil {
		return err
	}
	stops = append(stops, stopChild(ctl))
	ep.Controller = url
	if cfg.Agents {
		kc, err := cl.UserKubeconfig("agents", "system:serviceaccount:"+cfg.Namespace+":"+AgentsAccount)
		if err != nil {
			return fmt.Errorf("local: %w", err)
		}
		runner, url, err := startChild(ctx, cfg, "agents", []string{"agents", "--kubeconfig=" + kc, "--prometheus=" + prom.URL(),
			"--snapshots-from=" + strings.TrimSuffix(ep.Controller, "/metrics"), "--influx-url=" + influx.URL(),
			"--dir=" + filepath.Join(cfg.Dir, "agents"), "--step=" + cfg.Step.String()})
		if err != nil {
			return err
		}
		stops = append(stops, stopChild(runner))
		ep.Agents = url
	}
	if err := writeEndpoints(cfg.Dir, ep); err != nil {
		return err
	}
	stops = append(stops, func() error { return os.Remove(filepath.Join(cfg.Dir, EndpointsFile)) })
	log.Info("local testbed up", "prometheus", ep.Prometheus, "influxdb", ep.InfluxDB, "controller", ep.Controller, "apps", len(apps))
	<-ctx.Done()
	return nil
}

// startChild runs the aware binary with args, its metrics on a free
// loopback port, logging to Dir/<name>.log, and waits until it serves
// /metrics.
func startChild(ctx context.Context, cfg Config, name string, args []string) (*localproc.Process, string, error) {
	addr, err := localproc.FreeLoopbackAddr()
	if err != nil {
		return nil, "", fmt.Errorf("local: %w", err)
	}
	url := "http://" + addr + "/metrics"
	p, err := localproc.Start(cfg.Aware, append(slices.Clone(args), "--metrics-addr="+addr, "--probe-addr=0"),
		localproc.WithLogFile(filepath.Join(cfg.Dir, name+".log")), localproc.WithProcessGroup())
	if err != nil {
		return nil, "", fmt.Errorf("local: %s: %w", name, err)
	}
	if err := p.WaitReady(ctx, time.Minute, 200*time.Millisecond, localproc.HTTPProbe(nil, url, http.StatusOK)); err != nil {
		_ = p.Stop(syscall.SIGTERM, 10*time.Second)
		return nil, "", fmt.Errorf("local: %s: %w", name, err)
	}
	return p, url, nil
}

func stopChild(p *localproc.Process) func() error {
	return func() error {
		if p.Exited() {
			return nil
		}
		return p.Stop(syscall.SIGTERM, 15*time.Second)
	}
}

func writeEndpoints(dir string, ep Endpoints) error {
	b, err := json.MarshalIndent(ep, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, EndpointsFile), b, 0o644); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	return nil
}

// ReadEndpoints reads a supervisor's endpoints from dir: os.ErrNotExist
// until it is up.
func ReadEndpoints(dir string) (Endpoints, error) {
	b, err := os.ReadFile(filepath.Join(dir, EndpointsFile))
	if err != nil {
		return Endpoints{}, err
	}
	var ep Endpoints
	if err := json.Unmarshal(b, &ep); err != nil {
		return Endpoints{}, fmt.Errorf("local: %s: %w", filepath.Join(dir, EndpointsFile), err)
	}
	return ep, nil
}
