package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// Step is the controller's step (wall time).
	Step time.Duration
	// TimeScale is how many simulated seconds the twin plays per wall
	// second (0: DefaultTimeScale). The twin ticks every TwinClock(Step,
	// TimeScale) of wall time, Prometheus scrapes it at every tick, and
	// the controller and the agent runner get it as --time-scale, so that
	// the recommenders' windows run in the twin's time.
	TimeScale float64
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
	// Targets is the directory (absolute) whose <name>.json files
	// Prometheus's job "study" scrapes (file-based service discovery,
	// re-read every second): a study attaching to the testbed registers
	// its own scrape targets there (RegisterTarget).
	Targets string `json:"targets"`
	// Policies is the agent runner's folder of initial policies
	// (absolute; its --policies): a study drops a policy there
	// (agents.WritePolicy into Policies/<name>) and annotates an MPA
	// agents.aware.dev/initial-policy: <name>.
	Policies string `json:"policies"`
	// Checkpoints is the agent runner's checkpoint folder (absolute):
	// <namespace>/<MPA name>-<UID>/ holds an agent's weights and its
	// state (controller/agents.ReadState), the runner's own count of its
	// acting steps among them. Empty without the runner.
	Checkpoints string `json:"checkpoints,omitempty"`
	// The clock: TimeScale simulated seconds per wall second; Step the
	// controller's wall step, TwinTick the twin's wall tick (and
	// Prometheus's scrape interval) and TwinSimStep the simulated time per
	// tick, as Go durations ("15s").
	TimeScale   float64 `json:"timeScale"`
	Step        string  `json:"step"`
	TwinTick    string  `json:"twinTick"`
	TwinSimStep string  `json:"twinSimStep"`
}

// EndpointsFile is the name of the endpoints file in Config.Dir.
const EndpointsFile = "endpoints.json"

// Names of the service accounts the controller and agent runner act as
// (the testbed's RBAC binds them).
const (
	ControllerAccount = "aware-controller"
	AgentsAccount     = "aware-agents"
)

// DefaultTimeScale is the twin's simulated seconds per wall second: 10 s
// per 1 s tick, as in the controller benchmark.
const DefaultTimeScale = 10

// TargetsDir is the name, in Config.Dir, of the directory of the study
// scrape job's target files (Endpoints.Targets).
const TargetsDir = "targets"

// PoliciesDir is the name, in Config.Dir, of the agent runner's folder
// of initial policies (Endpoints.Policies).
const PoliciesDir = "policies"

// TwinClock is the twin's clock for a controller stepping every step of
// wall time at time scale k: it ticks every min(1s, step/3) of wall time
// (so that a rate over one step has at least three scrapes) and advances
// tick × k of simulated time per tick, which must be a whole number of
// seconds, at least 1 s (the load shapes' step); anything else is refused,
// naming --step and --time-scale.
func TwinClock(step time.Duration, k float64) (tick, simStep time.Duration, err error) {
	if !(k > 0) || math.IsInf(k, 0) {
		return 0, 0, fmt.Errorf("local: --time-scale %g: want a positive finite number of simulated seconds per wall second", k)
	}
	if step < time.Second {
		return 0, 0, fmt.Errorf("local: --step %s: the controller's step must be at least 1s", step)
	}
	tick = min(time.Second, step/3)
	sim := float64(tick) * k
	simStep = time.Duration(math.Round(sim/float64(time.Second))) * time.Second
	if simStep < time.Second || math.Abs(sim-float64(simStep)) > float64(time.Millisecond) {
		return 0, 0, fmt.Errorf("local: --step %s and --time-scale %g: the twin ticks every %s (a third of the step, at most 1s) and so advances %s per tick, which must be a whole number of seconds, at least 1s: choose a step whose third (at most 1s) times the time scale is one",
			step, k, tick, time.Duration(sim).Round(time.Millisecond))
	}
	return tick, simStep, nil
}

// studyJob is the scrape job of the studies' targets: the <name>.json
// files of dir (RegisterTarget), re-read every second.
func studyJob(dir string) string {
	return fmt.Sprintf("- job_name: study\n  file_sd_configs:\n  - files: [%s]\n    refresh_interval: 1s\n", strconv.Quote(filepath.Join(dir, "*.json")))
}

// Run starts everything of cfg, writes the endpoints and runs until ctx
// ends, then stops it all in reverse order.
func Run(ctx context.Context, cfg Config) (err error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.TimeScale == 0 {
		cfg.TimeScale = DefaultTimeScale
	}
	tick, simStep, err := TwinClock(cfg.Step, cfg.TimeScale)
	if err != nil {
		return err
	}
	targets, err := filepath.Abs(filepath.Join(cfg.Dir, TargetsDir))
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if err := os.MkdirAll(targets, 0o755); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	policies, err := filepath.Abs(filepath.Join(cfg.Dir, PoliciesDir))
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if err := os.MkdirAll(policies, 0o755); err != nil {
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
	simApps, _, err := generator.Simulated(apps, cfg.Traces, simStep, cfg.Seed)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	tw, err := twin.New(cs, simApps, prof, twin.WithNamespace(cfg.AppsNamespace), twin.WithTick(tick), twin.WithSimStep(simStep),
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

	// Prometheus scrapes at every tick (whole milliseconds, as it takes
	// them).
	prom, err := prometheus.Start(ctx, filepath.Join(cfg.Dir, "prometheus"), prometheus.WithScrapeConfigYAML(scrape+studyJob(targets)),
		prometheus.WithScrapeInterval(max(tick.Round(time.Millisecond), time.Millisecond)), prometheus.WithLogger(log))
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	stops = append(stops, prom.Stop)
	influx, err := influxdb.Start(ctx, filepath.Join(cfg.Dir, "influxdb"))
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	stops = append(stops, influx.Stop)

	ep := Endpoints{Pid: os.Getpid(), Prometheus: prom.URL(), InfluxDB: influx.URL(), Twin: "http://" + ln.Addr().String() + "/metrics",
		Targets: targets, Policies: policies, TimeScale: cfg.TimeScale, Step: cfg.Step.String(), TwinTick: tick.String(), TwinSimStep: simStep.String()}
	timeScale := "--time-scale=" + strconv.FormatFloat(cfg.TimeScale, 'g', -1, 64)
	kc, err := cl.UserKubeconfig("controller", "system:serviceaccount:"+cfg.Namespace+":"+ControllerAccount)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	args := []string{"controller", "--kubeconfig=" + kc, "--prometheus=" + prom.URL(), "--influx-url=" + influx.URL(),
		"--store-dir=" + filepath.Join(cfg.Dir, "spool"), "--step=" + cfg.Step.String(), timeScale}
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
			"--dir=" + filepath.Join(cfg.Dir, "agents"), "--policies=" + policies, "--step=" + cfg.Step.String(), timeScale})
		if err != nil {
			return err
		}
		stops = append(stops, stopChild(runner))
		ep.Agents = url
		if ep.Checkpoints, err = filepath.Abs(filepath.Join(cfg.Dir, "agents", "checkpoints")); err != nil {
			return fmt.Errorf("local: %w", err)
		}
	}
	if err := writeEndpoints(cfg.Dir, ep); err != nil {
		return err
	}
	stops = append(stops, func() error { return os.Remove(filepath.Join(cfg.Dir, EndpointsFile)) })
	log.Info("local testbed up", "prometheus", ep.Prometheus, "influxdb", ep.InfluxDB, "controller", ep.Controller, "apps", len(apps),
		"timeScale", cfg.TimeScale, "step", cfg.Step, "twinTick", tick, "twinSimStep", simStep, "targets", targets)
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
