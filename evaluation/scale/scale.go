package scale

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/deploy"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/infra/influxdb"
	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/infra/prometheus"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
	"github.com/aware-autoscaler/aware/workloads/twin"
)

const (
	// simStep is the simulated time per twin tick, and so the load
	// shapes' step (the twin's default).
	simStep = 10 * time.Second
	// counterLead is how long before a window's edge the controller's
	// counters are scraped, so that the scrape does not straddle the
	// first steps of a round.
	counterLead = 200 * time.Millisecond
	// roundPoll is how often the controller's /metrics is read while a
	// round's report is awaited.
	roundPoll = 500 * time.Millisecond
	// logTail is how much of the controller's log errors quote.
	logTail = 4096
	// quoteMPAs bounds the MPAs without fresh metrics the result quotes.
	quoteMPAs = 5
	// quoteChars bounds each quoted condition message.
	quoteChars = 160
)

// Files the benchmark leaves in Config.Dir besides the components' own
// (cluster/, prometheus/, store/, controller.log).
const (
	// MetricsFile is the controller's /metrics at the end of the window.
	MetricsFile = "controller-metrics.txt"
)

// Run runs the benchmark described by cfg: it sets everything up in
// cfg.Dir, measures cfg.Rounds rounds after the warm-up and tears
// everything down (the directory stays). The Result is complete only when
// the error is nil. It sets controller-runtime's global logger to
// cfg.Log, as the controller does, for the watch on the MPAs.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	dir, err := cluster.FreshDir(cfg.Dir)
	if err != nil {
		return Result{}, err
	}
	// controller-runtime's cache (the MPA watch) logs through its global
	// logger, as the controller does.
	crlog.SetLogger(logr.FromSlogHandler(cfg.Log.Handler()))
	b := &bench{cfg: cfg, dir: dir, log: cfg.Log}
	defer b.teardown()
	return b.run(ctx)
}

// bench is one run in progress.
type bench struct {
	cfg   Config
	dir   string
	log   *slog.Logger
	stops []stopper // in start order; teardown runs them in reverse

	ctl      *localproc.Process
	runner   *localproc.Process // the agent runner, with Config.Agents
	runnerMx string             // its /metrics URL
	rc       *rest.Config       // the cluster's admin
	twinDone chan struct{}
	twinErr  error
}

type stopper struct {
	name string
	stop func(context.Context) error
}

func (b *bench) onTeardown(name string, stop func(context.Context) error) {
	b.stops = append(b.stops, stopper{name, stop})
}

// teardown stops what run started, last first; failures are logged (they
// lose no measurement).
func (b *bench) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, s := range slices.Backward(b.stops) {
		if err := s.stop(ctx); err != nil {
			b.log.Warn("bench: stopping "+s.name, "err", err)
		}
	}
}

// healthy reports the controller's or the twin's untimely end.
func (b *bench) healthy() error {
	if b.ctl != nil && b.ctl.Exited() {
		return fmt.Errorf("scale: the controller exited (%v); log %s:\n%s", b.ctl.Err(),
			filepath.Join(b.dir, controllerLog), b.ctl.LogTail(logTail))
	}
	if b.runner != nil && b.runner.Exited() {
		return fmt.Errorf("scale: the agent runner exited (%v); log %s:\n%s", b.runner.Err(),
			filepath.Join(b.dir, runnerLog), b.runner.LogTail(logTail))
	}
	select {
	case <-b.twinDone:
		return fmt.Errorf("scale: the twin stopped: %v", b.twinErr)
	default:
		return nil
	}
}

// poolObjects generates, for the calibration prof, the first n apps of the
// pool of seed and their
// objects as the benchmark deploys them: in Namespace, the MPAs with the
// built-in recommender. The cluster's nodes alternate x86 and Power
// (cluster.DefaultArchs), as the manifests' node selectors expect.
//
// With agentEpisode > 0 the MPAs name the AWARE recommender instead of
// the default one, with bootstrapping agents in episodes of agentEpisode
// steps: OFFLINE for window episodes, then ONLINE (acting and training)
// for good, never SERVING.
func poolObjects(prof *calibration.Profile, n int, seed int64, agentEpisode, window int) ([]generator.App, []generator.Objects, error) {
	apps, err := generator.FirstApps(prof, seed, n)
	if err != nil {
		return nil, nil, fmt.Errorf("scale: %w", err)
	}
	mo := generator.ManifestOptions{Namespace: Namespace, Recommender: v1alpha1.DefaultRecommenderName}
	if agentEpisode > 0 {
		mo.Recommender = agents.DefaultName
	}
	objs := make([]generator.Objects, len(apps))
	for i, a := range apps {
		if objs[i], err = generator.Build(a, mo); err != nil {
			return nil, nil, fmt.Errorf("scale: %w", err)
		}
		if agentEpisode > 0 {
			ag := objs[i].MPA.Spec.Agent
			boot := true
			ag.Bootstrap, ag.EpisodeLength = &boot, agentEpisode
			// ONLINE once window episodes are recorded (any reward
			// reaches 1e-6; 0 would mean the default, above the API's
			// bound for short episodes). Serving needs a mean episode
			// reward of 2 per step, the reward's maximum and the largest
			// threshold the API accepts: never reached.
			ag.Thresholds = v1alpha1.RewardThresholds{Online: 1e-6, Serving: 2 * float64(agentEpisode), Variance: 1e9, Window: window}
		}
		// An MPA the controller and the runner would refuse (and skip)
		// would only show as a warm-up that never ends.
		if _, err := autoscaler.PolicyOf(objs[i].MPA); err != nil {
			return nil, nil, fmt.Errorf("scale: MPA %s: %w", objs[i].MPA.Name, err)
		}
	}
	return apps, objs, nil
}

func (b *bench) run(ctx context.Context) (Result, error) {
	cfg, log := b.cfg, b.log
	res := Result{Apps: cfg.Apps, Step: cfg.Step, Targets: cfg.Targets}

	// The pool, its objects and its simulated twin apps.
	prof, err := calibration.Default()
	if err != nil {
		return res, fmt.Errorf("scale: %w", err)
	}
	apps, objs, err := poolObjects(prof, cfg.Apps, cfg.PoolSeed, cfg.AgentEpisode, cfg.AgentWindow)
	if err != nil {
		return res, err
	}
	keys := make([]string, len(apps))
	type demand struct {
		pods        int
		cpu, memory float64
	}
	perClass := map[string]*demand{}
	wantPods, cpu, memory := 0, 0.0, 0.0
	for i, a := range apps {
		keys[i] = Namespace + "/" + a.Name()
		d := perClass[a.Env.NodeClass]
		if d == nil {
			d = &demand{}
			perClass[a.Env.NodeClass] = d
		}
		d.pods += a.Initial.Replicas
		d.cpu += a.Initial.CPU * float64(a.Initial.Replicas)
		d.memory += a.Initial.Memory * float64(a.Initial.Replicas)
		wantPods += a.Initial.Replicas
		cpu += a.Initial.CPU * float64(a.Initial.Replicas)
		memory += a.Initial.Memory * float64(a.Initial.Replicas)
	}
	// Each architecture gets half of the nodes: size them for the larger
	// class.
	need := 0
	for _, d := range perClass {
		need = max(need, len(cluster.DefaultArchs())*nodesNeeded(d.pods, d.cpu, d.memory))
	}
	nodes := max(4, need)
	if cfg.Nodes != 0 {
		if cfg.Nodes < need {
			log.Warn("bench: fewer nodes than the default, which holds twice the pool's initial pods and eight times its initial requests; scaled-up pods may stay Pending",
				"nodes", cfg.Nodes, "suggested", need)
		}
		nodes = cfg.Nodes
	}
	res.Nodes = nodes
	simApps, shapes, err := generator.Simulated(apps, cfg.Traces, simStep, cfg.Seed)
	if err != nil {
		return res, fmt.Errorf("scale: %w", err)
	}
	log.Info("bench: pool", "apps", len(apps), "pods", wantPods, "cpu", math.Round(cpu), "memoryGiB", math.Round(memory/(1<<30)), "nodes", nodes, "poolSeed", cfg.PoolSeed, "shapes", shapes.Origin, "dir", b.dir)

	// The control plane, the CRD, the controller's rights and the apps.
	start := time.Now()
	cl, err := cluster.Up(ctx, cluster.Config{Dir: filepath.Join(b.dir, "cluster"), Binaries: cfg.Binaries, Nodes: nodes, PodsPerNode: nodePods, NodeCPU: nodeCPU, NodeMemory: nodeMemory, Log: logWriter{log}})
	if err != nil {
		return res, fmt.Errorf("scale: %w", err)
	}
	b.onTeardown("the control plane", cl.Down)
	res.Setup.Cluster = time.Since(start)

	start = time.Now()
	rc, err := restConfig(cl.Kubeconfig)
	if err != nil {
		return res, err
	}
	b.rc = rc
	admin, err := adminClient(rc)
	if err != nil {
		return res, err
	}
	if err := deploy.InstallCRDs(ctx, admin, time.Minute); err != nil {
		return res, fmt.Errorf("scale: %w", err)
	}
	ctlKubeconfig, err := grantControllerRole(ctx, cl, admin)
	if err != nil {
		return res, err
	}
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return res, fmt.Errorf("scale: namespace %s: %w", Namespace, err)
	}
	if err := createObjects(ctx, admin, objs, log); err != nil {
		return res, err
	}
	res.Setup.Objects = time.Since(start)
	log.Info("bench: objects created", "objects", 3*len(objs), "in", res.Setup.Objects.Round(time.Millisecond))

	start = time.Now()
	if err := waitPods(ctx, admin, Namespace, wantPods, 2*time.Minute+time.Duration(wantPods)*300*time.Millisecond, log); err != nil {
		return res, err
	}
	res.Setup.Pods = time.Since(start)
	log.Info("bench: pods Running", "pods", wantPods, "in", res.Setup.Pods.Round(time.Millisecond))

	// The twin, scraped by Prometheus.
	promURL, err := b.startTwinAndPrometheus(ctx, rc, simApps, prof)
	if err != nil {
		return res, err
	}

	// A cache of the MPAs, to see the warm-up through.
	mpas, err := b.watchMPAs(ctx, rc, admin.Scheme())
	if err != nil {
		return res, err
	}

	// With agents, the trajectory store they train from.
	var influxURL string
	if len(cfg.Agents) > 0 {
		influx, err := influxdb.Start(ctx, filepath.Join(b.dir, "influxdb"))
		if err != nil {
			return res, fmt.Errorf("scale: %w", err)
		}
		b.onTeardown("InfluxDB", func(context.Context) error { return influx.Stop() })
		influxURL = influx.URL()
	}

	// The controller, as its own process with its ClusterRole's rights.
	args := append(slices.Clone(cfg.Controller),
		"--kubeconfig="+ctlKubeconfig, "--prometheus="+promURL, "--store-dir="+filepath.Join(b.dir, "store"),
		"--step="+cfg.Step.String())
	if influxURL != "" {
		args = append(args, "--influx-url="+influxURL)
	}
	ctlStart := time.Now()
	var metricsURL string
	b.ctl, metricsURL, err = b.startProcess(ctx, "the controller", "Controller", args, controllerLog)
	if err != nil {
		return res, err
	}
	ctl, pid := b.ctl, b.ctl.Pid()
	log.Info("bench: controller started", "pid", pid, "metrics", metricsURL, "log", filepath.Join(b.dir, controllerLog))
	recommender := ""
	if len(cfg.Agents) > 0 {
		if err := b.startAgents(ctx, cl, admin, promURL, influxURL, strings.TrimSuffix(metricsURL, "/metrics")); err != nil {
			return res, err
		}
		recommender = agents.DefaultName
	}

	// Warm-up: every MPA has a recommendation (with agents, from its
	// agent) on fresh metrics. Agents all leave OFFLINE in the same few
	// rounds and their first actions queue at the updater together: at
	// 1000 MPAs on 2 cores the last of them acted 8 minutes after the
	// window (2026-11-26), hence 40 more steps.
	warmup := 3*time.Minute + 20*cfg.Step + time.Duration(cfg.AgentEpisode*cfg.AgentWindow)*cfg.Step
	if len(cfg.Agents) > 0 {
		warmup += 40 * cfg.Step
	}
	res.Setup.Allowance = warmup
	warmHC := &http.Client{Timeout: 5 * time.Second}
	lastLog := time.Now()
	err = poll(ctx, warmup, 500*time.Millisecond, func() (bool, error) {
		if err := b.healthy(); err != nil {
			return false, err
		}
		withRec, withMetrics, err := countMPAs(ctx, mpas, recommender)
		if err != nil {
			return false, err
		}
		if time.Since(lastLog) >= 10*time.Second {
			// With the controller's last round, so that how far rounds
			// reach during the warm-up can be read from the bench's log.
			attrs := []any{"withRecommendation", withRec, "withMetrics", withMetrics, "of", len(keys)}
			if c, _, err := scrapeCounters(ctx, warmHC, metricsURL); err == nil && len(c.LastRound) > 0 {
				attrs = append(attrs, "lastRoundSteps", c.LastRound["steps"], "lastRoundSeconds", c.LastRound["seconds"],
					"lastRoundWritten", c.LastRound["written"])
			}
			log.Info("bench: warming up", attrs...)
			lastLog = time.Now()
		}
		res.Setup.Ready = withMetrics
		return withMetrics == len(keys), nil
	})
	res.Setup.Warmup = time.Since(ctlStart)
	switch {
	case err == nil:
		log.Info("bench: warmed up", "in", res.Setup.Warmup.Round(time.Millisecond))
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		// Out of its allowance: the rounds are measured all the same, and
		// the warm-up is reported as a missed check.
		log.Warn("bench: the warm-up ran out of its allowance; measuring what runs", "ready", res.Setup.Ready, "of", len(keys),
			"after", res.Setup.Warmup.Round(time.Second), "controllerLog", filepath.Join(b.dir, controllerLog))
	default:
		return res, fmt.Errorf("scale: warm-up (every MPA with a recommendation and MetricsAvailable=True): %w; controller log %s:\n%s%s",
			err, filepath.Join(b.dir, controllerLog), ctl.LogTail(logTail), b.agentsTail())
	}

	if err := b.measure(ctx, &res, len(keys), metricsURL); err != nil {
		return res, err
	}
	ps, err := podStates(ctx, admin, Namespace)
	if err != nil {
		return res, err
	}
	res.Pods, res.Pending, res.Resizing = ps.running, ps.pending, ps.resizing
	if res.Events, err = eventCounts(ctx, admin); err != nil {
		log.Warn("bench: events not counted", "err", err)
	}
	if _, res.WithMetrics, res.WithoutMetrics, err = mpaMetrics(ctx, mpas, recommender, quoteMPAs); err != nil {
		return res, err
	}
	// Every request the API server refused the controller or the agent
	// runner since they started (their generated ClusterRoles only), from
	// one read of the audit log.
	audited, err := cl.Audit("")
	if err != nil {
		return res, err
	}
	refused := cluster.Refused(audited)
	for _, user := range []string{controllerUser, agentsUser} {
		for _, e := range refused {
			if e.User != user {
				continue
			}
			res.Refused++
			if res.FirstRefused == "" {
				res.FirstRefused = e.String()
			}
		}
	}
	return res, nil
}

// The controller's and the agent runner's logs in Config.Dir.
const (
	controllerLog = "controller.log"
	runnerLog     = "agents.log"
)

// startProcess starts argv (a program of this module, named what in
// errors; field is its Config field) with --metrics-addr on a free
// loopback port and --probe-addr=0, logging to logName in the working
// directory, stops it at teardown, and waits until it serves /metrics.
// It returns the process and its /metrics URL. A program that is the go
// tool (`go run`) is refused: its pid would not be the one measured.
func (b *bench) startProcess(ctx context.Context, what, field string, argv []string, logName string) (*localproc.Process, string, error) {
	addr, err := localproc.FreeLoopbackAddr()
	if err != nil {
		return nil, "", fmt.Errorf("scale: %w", err)
	}
	url := "http://" + addr + "/metrics"
	p, err := localproc.Start(argv[0], append(slices.Clone(argv[1:]), "--metrics-addr="+addr, "--probe-addr=0"),
		localproc.WithLogFile(filepath.Join(b.dir, logName)), localproc.WithProcessGroup())
	if err != nil {
		return nil, "", fmt.Errorf("scale: %s: %w", what, err)
	}
	b.onTeardown(what, func(context.Context) error {
		if p.Exited() {
			return nil
		}
		return p.Stop(syscall.SIGTERM, 15*time.Second)
	})
	if err := p.WaitReady(ctx, time.Minute, 200*time.Millisecond, localproc.HTTPProbe(nil, url, http.StatusOK)); err != nil {
		return nil, "", fmt.Errorf("scale: %s: %w", what, err)
	}
	comm, _, err := procCPU(p.Pid())
	if err != nil {
		return nil, "", fmt.Errorf("scale: %s (pid %d): %w", what, p.Pid(), err)
	}
	if comm == "go" {
		return nil, "", fmt.Errorf("scale: %s %q runs the go tool, not %s: build it and run the binary", field, argv, what)
	}
	return p, url, nil
}

// startAgents starts the agent runner (Config.Agents) as its own process
// with its ClusterRole's rights, reading influxURL and observing from the
// snapshots the controller serves at ctlURL (promURL when it does not
// answer), and waits until it serves /metrics.
func (b *bench) startAgents(ctx context.Context, cl *cluster.Cluster, admin client.Client, promURL, influxURL, ctlURL string) error {
	kubeconfig, err := grantRole(ctx, cl, admin, deploy.AgentsRole, agentsUser)
	if err != nil {
		return err
	}
	args := append(slices.Clone(b.cfg.Agents),
		"--kubeconfig="+kubeconfig, "--prometheus="+promURL, "--snapshots-from="+ctlURL, "--influx-url="+influxURL, "--dir="+filepath.Join(b.dir, "agents"),
		"--step="+b.cfg.Step.String())
	if b.runner, b.runnerMx, err = b.startProcess(ctx, "the agent runner", "Agents", args, runnerLog); err != nil {
		return err
	}
	runner := b.runner
	b.log.Info("bench: agent runner started", "pid", runner.Pid(), "metrics", b.runnerMx, "log", filepath.Join(b.dir, runnerLog))
	return nil
}

// agentsTail is the end of the agent runner's log, for errors ("" without
// agents).
func (b *bench) agentsTail() string {
	if b.runner == nil {
		return ""
	}
	return fmt.Sprintf("\nagent runner log %s:\n%s", filepath.Join(b.dir, runnerLog), b.runner.LogTail(logTail))
}

// startTwinAndPrometheus serves the twin's metrics on a loopback port, runs
// it and starts Prometheus scraping it; it returns Prometheus's URL.
func (b *bench) startTwinAndPrometheus(ctx context.Context, rc *rest.Config, simApps []sim.App, prof *calibration.Profile) (string, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", fmt.Errorf("scale: %w", err)
	}
	tw, err := twin.New(cs, simApps, prof, twin.WithNamespace(Namespace), twin.WithTick(b.cfg.Tick),
		twin.WithSimStep(simStep), twin.WithSeed(b.cfg.Seed), twin.WithLogger(b.log))
	if err != nil {
		return "", fmt.Errorf("scale: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("scale: twin metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", tw.Handler())
	// The workload series are scraped in shards (twin.MountShards).
	scrape, err := tw.MountShards(mux, ln.Addr().String())
	if err != nil {
		return "", fmt.Errorf("scale: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	b.onTeardown("the twin's metrics server", srv.Shutdown)

	twinCtx, stopTwin := context.WithCancel(context.WithoutCancel(ctx))
	b.twinDone = make(chan struct{})
	go func() {
		b.twinErr = tw.Run(twinCtx)
		close(b.twinDone)
	}()
	b.onTeardown("the twin", func(ctx context.Context) error {
		stopTwin()
		select {
		case <-b.twinDone:
			return b.twinErr
		case <-ctx.Done():
			return ctx.Err()
		}
	})

	prom, err := prometheus.Start(ctx, filepath.Join(b.dir, "prometheus"), prometheus.WithScrapeInterval(b.cfg.Scrape),
		prometheus.WithScrapeConfigYAML(scrape), prometheus.WithLogger(b.log))
	if err != nil {
		return "", fmt.Errorf("scale: %w", err)
	}
	b.onTeardown("Prometheus", func(context.Context) error { return prom.Stop() })
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := prom.WaitForTarget(wctx, "twin"); err != nil {
		return "", fmt.Errorf("scale: %w", err)
	}
	return prom.URL(), nil
}

// watchMPAs starts a cache of the benchmark's MPAs and returns it (a
// reader of the MPAs).
func (b *bench) watchMPAs(ctx context.Context, rc *rest.Config, scheme *runtime.Scheme) (client.Reader, error) {
	c, err := cache.New(rc, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{Namespace: {}}})
	if err != nil {
		return nil, fmt.Errorf("scale: MPA cache: %w", err)
	}
	cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	b.onTeardown("the MPA watch", func(context.Context) error {
		stop()
		return <-done
	})
	if _, err := c.GetInformer(ctx, &v1alpha1.MultidimPodAutoscaler{}); err != nil {
		return nil, fmt.Errorf("scale: MPA informer: %w", err)
	}
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("scale: the MPA cache did not sync: %w", context.Cause(ctx))
	}
	return c, nil
}

// countMPAs counts the benchmark's MPAs with a recommendation (from
// recommender, unless ""), and those of them whose MetricsAvailable
// condition is True.
func countMPAs(ctx context.Context, r client.Reader, recommender string) (withRec, withMetrics int, err error) {
	withRec, withMetrics, _, err = mpaMetrics(ctx, r, recommender, 0)
	return withRec, withMetrics, err
}

// mpaMetrics is countMPAs that also quotes, for up to quote MPAs whose
// MetricsAvailable condition is not True, that condition's message.
func mpaMetrics(ctx context.Context, r client.Reader, recommender string, quote int) (withRec, withMetrics int, without []string, err error) {
	var l v1alpha1.MultidimPodAutoscalerList
	if err := r.List(ctx, &l, client.InNamespace(Namespace)); err != nil {
		return 0, 0, nil, fmt.Errorf("scale: listing MPAs: %w", err)
	}
	for i := range l.Items {
		m := &l.Items[i]
		rec := m.Status.Recommendation != nil && (recommender == "" || m.Status.Recommendation.Recommender == recommender)
		if rec {
			withRec++
		}
		c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionMetricsAvailable)
		if rec && c != nil && c.Status == metav1.ConditionTrue {
			withMetrics++
			continue
		}
		if len(without) < quote {
			msg := "no MetricsAvailable condition"
			if c != nil {
				msg = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
			}
			if r := []rune(msg); len(r) > quoteChars {
				msg = string(r[:quoteChars]) + "…"
			}
			without = append(without, m.Name+": "+msg)
		}
	}
	return withRec, withMetrics, without, nil
}

// measure measures cfg.Rounds rounds from the next step boundary: each
// round as the controller reports it (duration, steps, status writes), the
// controller's CPU and RSS over the window and its counters' increase.
func (b *bench) measure(ctx context.Context, res *Result, want int, metricsURL string) error {
	cfg, pid := b.cfg, b.ctl.Pid()
	hc := &http.Client{Timeout: 10 * time.Second}
	t0 := time.Now().Truncate(cfg.Step).Add(cfg.Step)
	r0, err := readAt(ctx, hc, metricsURL, pid, t0)
	if err != nil {
		return err
	}
	smp := startSampler(pid, r0.at, r0.cpu)
	defer smp.stop()
	writes0, err := apiWrites(ctx, b.rc)
	if err != nil {
		b.log.Warn("bench: API server writes not measured", "err", err)
	}
	var a0 agentsReading
	var asmp *sampler
	if b.runner != nil {
		if a0, err = readAgents(ctx, hc, b.runnerMx, b.runner.Pid()); err != nil {
			return err
		}
		asmp = startSampler(b.runner.Pid(), a0.at, a0.cpu)
		defer asmp.stop()
	}
	b.log.Info("bench: measuring", "rounds", cfg.Rounds, "from", t0.Format(time.TimeOnly))

	for k := range cfg.Rounds {
		T := t0.Add(time.Duration(k) * cfg.Step)
		// The controller reports round T when a step of a later round
		// finishes; a controller that has not by T + 3 steps is stuck.
		// Its /metrics is read from T + step on, every roundPoll:
		// rendering it (a few series per MPA) costs the controller CPU.
		deadline := T.Add(3 * cfg.Step)
		rd := Round{Start: T, Want: want}
		if err := sleepUntil(ctx, T.Add(cfg.Step)); err != nil {
			return err
		}
		for {
			if c, _, err := scrapeCounters(ctx, hc, metricsURL); err == nil {
				var ok bool
				if rd, ok = roundOf(T, want, c); ok {
					break
				}
			}
			if time.Now().After(deadline) {
				break
			}
			if err := b.healthy(); err != nil {
				return err
			}
			if err := sleepUntil(ctx, time.Now().Add(roundPoll)); err != nil {
				return err
			}
		}
		b.log.Info("bench: round", "n", k+1, "T", T.Format(time.TimeOnly), "reported", rd.Reported, "complete", rd.Complete,
			"steps", rd.Steps, "duration", rd.Duration, "written", rd.Written, "unchanged", rd.Unchanged)
		res.Rounds = append(res.Rounds, rd)
	}

	end := t0.Add(time.Duration(cfg.Rounds) * cfg.Step)
	if now := time.Now(); now.After(end) {
		end = now
	}
	r1, err := readAt(ctx, hc, metricsURL, pid, end)
	if err != nil {
		return err
	}
	if writes0 != nil {
		if writes1, err := apiWrites(ctx, b.rc); err != nil {
			b.log.Warn("bench: API server writes not measured", "err", err)
		} else {
			res.APIWrites = diff(writes1, writes0)
		}
	}
	// For the analysis of where the time goes: every metric of the
	// controller (workqueue, client and step histograms) at the end.
	if err := os.WriteFile(filepath.Join(b.dir, MetricsFile), r1.raw, 0o644); err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	if b.runner != nil {
		a1, err := readAgents(ctx, hc, b.runnerMx, b.runner.Pid())
		if err != nil {
			return err
		}
		if res.Agents, err = agentsResult(a0, a1, asmp, b.runner.Pid()); err != nil {
			return err
		}
	}
	mem, err := procMemory(pid)
	if err != nil {
		return fmt.Errorf("scale: the controller (pid %d): %w", pid, err)
	}
	rssMax, cpuPeak, err := smp.stop()
	if err != nil {
		return fmt.Errorf("scale: sampling the controller (pid %d): %w", pid, err)
	}
	res.Window = r1.at.Sub(r0.at)
	res.CPU = (r1.cpu - r0.cpu).Seconds() / res.Window.Seconds()
	res.CPUPeak = cpuPeak
	res.HostCores = goruntime.NumCPU()
	res.HostCPU = (r1.host - r0.host).Seconds() / res.Window.Seconds()
	names := map[int]string{pid: "controller"}
	if b.runner != nil {
		names[b.runner.Pid()] = "agent runner"
	}
	res.Processes = processCPU(r0.procs, r1.procs, names, res.Window)
	if r0.psi && r1.psi && res.Window > 0 {
		res.Pressure = &Pressure{CPU: (r1.cpuStall - r0.cpuStall).Seconds() / res.Window.Seconds(),
			IO: (r1.ioStall - r0.ioStall).Seconds() / res.Window.Seconds()}
	}
	res.RSSMax, res.HWM, res.LiveHeap = max(rssMax, mem.RSS), mem.HWM, uint64(r1.counters.LiveHeap)
	d := r1.counters.since(r0.counters)
	res.Errors, res.ErrorsTotal, res.Requests, res.Steps = d.Errors, r1.counters.Errors, d.Requests, d.Steps
	res.Actuations, res.Decisions, res.Snapshots = d.Actuations, d.Decisions, d.snapshots()
	res.DelayMean, res.StepMean = mean(d.DelaySeconds, d.Decisions), mean(d.StepSeconds, d.Steps)
	res.Phases = d.phases()
	return nil
}

// reading is what the measurement window's figures are differences of,
// read at its start and at its end.
type reading struct {
	counters counters // the controller's
	raw      []byte   // the controller's metrics page
	at       time.Time
	cpu      time.Duration // the controller's CPU time at at
	host     time.Duration // the machine's busy CPU time
	procs    map[int]procStat
	// Pressure stall totals: time some task waited for CPU and for I/O
	// (psi false: the kernel has no pressure information).
	cpuStall, ioStall time.Duration
	psi               bool
}

// readAt scrapes the controller's counters counterLead before t (so that
// the scrape is done by t), then at t reads the CPU times of the
// controller (pid), the machine and the testbed, which shares it.
func readAt(ctx context.Context, hc *http.Client, metricsURL string, pid int, t time.Time) (reading, error) {
	var r reading
	if err := sleepUntil(ctx, t.Add(-counterLead)); err != nil {
		return r, err
	}
	var err error
	if r.counters, r.raw, err = scrapeCounters(ctx, hc, metricsURL); err != nil {
		return r, fmt.Errorf("scale: %w", err)
	}
	if err := sleepUntil(ctx, t); err != nil {
		return r, err
	}
	_, r.cpu, err = procCPU(pid)
	r.at = time.Now()
	if err != nil {
		return r, fmt.Errorf("scale: the controller (pid %d): %w", pid, err)
	}
	if r.host, r.procs, err = testbedCPU(); err != nil {
		return r, fmt.Errorf("scale: %w", err)
	}
	var okCPU, okIO bool
	if r.cpuStall, okCPU, err = pressureStall("cpu"); err != nil {
		return r, fmt.Errorf("scale: %w", err)
	}
	if r.ioStall, okIO, err = pressureStall("io"); err != nil {
		return r, fmt.Errorf("scale: %w", err)
	}
	r.psi = okCPU && okIO
	return r, nil
}

// agentsReading is the agent runner's counters and CPU time at one moment.
type agentsReading struct {
	counters counters
	at       time.Time
	cpu      time.Duration
}

// readAgents reads the agent runner's counters (its /metrics at url) and
// CPU time (pid).
func readAgents(ctx context.Context, hc *http.Client, url string, pid int) (agentsReading, error) {
	var r agentsReading
	var err error
	if r.counters, _, err = scrapeCounters(ctx, hc, url); err != nil {
		return r, fmt.Errorf("scale: the agent runner: %w", err)
	}
	if _, r.cpu, err = procCPU(pid); err != nil {
		return r, fmt.Errorf("scale: the agent runner (pid %d): %w", pid, err)
	}
	r.at = time.Now()
	return r, nil
}

// agentsResult is the agent runner's figures between readings a0 and a1,
// with its RSS and busiest second from smp.
func agentsResult(a0, a1 agentsReading, smp *sampler, pid int) (*AgentsResult, error) {
	window := a1.at.Sub(a0.at)
	if window <= 0 {
		return nil, fmt.Errorf("scale: the agent runner's window %s is empty", window)
	}
	mem, err := procMemory(pid)
	if err != nil {
		return nil, fmt.Errorf("scale: the agent runner (pid %d): %w", pid, err)
	}
	rssMax, peak, err := smp.stop()
	if err != nil {
		return nil, fmt.Errorf("scale: sampling the agent runner (pid %d): %w", pid, err)
	}
	d := a1.counters.since(a0.counters)
	r := &AgentsResult{
		Window: window, CPU: (a1.cpu - a0.cpu).Seconds() / window.Seconds(), CPUPeak: peak,
		Training: d.TrainingSeconds / window.Seconds(), RSSMax: max(rssMax, mem.RSS), HWM: mem.HWM, LiveHeap: uint64(a1.counters.LiveHeap),
		Steps: d.AgentSteps, Updates: d.AgentUpdates, Withheld: d.AgentWithheld, Errors: d.AgentErrors, Episodes: d.AgentEpisodes,
		Hosted: a1.counters.AgentsHosted, Snapshots: d.snapshots(),
	}
	r.Acting = max(r.CPU-r.Training, 0)
	r.UpdatesPerSecond = sum(d.AgentUpdates) / window.Seconds()
	return r, nil
}

// testbedCPU reads the machine's busy CPU time and the CPU time of this
// process and its children (the control plane, Prometheus, the
// controller), by pid.
func testbedCPU() (time.Duration, map[int]procStat, error) {
	busy, _, err := hostCPU()
	if err != nil {
		return 0, nil, err
	}
	procs, err := children(os.Getpid())
	if err != nil {
		return 0, nil, err
	}
	self, err := readStat(os.Getpid())
	if err != nil {
		return 0, nil, err
	}
	procs[os.Getpid()] = self
	return busy, procs, nil
}

// processCPU is the CPU in cores of the processes seen at both ends of the
// window, by name (summed), busiest first: this process is "bench (twin,
// watch)" and the controller (pid ctl) "controller".
func processCPU(before, after map[int]procStat, names map[int]string, window time.Duration) []ProcessCPU {
	by := map[string]float64{}
	for pid, b := range before {
		a, ok := after[pid]
		if !ok {
			continue
		}
		name := b.comm
		if n, ok := names[pid]; ok {
			name = n
		} else if pid == os.Getpid() {
			name = "bench (twin, watch)"
		}
		by[name] += (a.cpu - b.cpu).Seconds() / window.Seconds()
	}
	out := make([]ProcessCPU, 0, len(by))
	for name, c := range by {
		out = append(out, ProcessCPU{Name: name, Cores: c})
	}
	slices.SortFunc(out, func(x, y ProcessCPU) int {
		if x.Cores != y.Cores {
			return cmp.Compare(y.Cores, x.Cores)
		}
		return strings.Compare(x.Name, y.Name)
	})
	return out
}

// sleepUntil sleeps until t or ctx's end.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// sampler reads a process's RSS and CPU time every second.
type sampler struct {
	quit chan struct{}
	done chan struct{}
	once bool

	rssMax  uint64
	cpuPeak float64
	err     error
}

// startSampler samples pid every second from start, when its CPU time was
// cpu0.
func startSampler(pid int, start time.Time, cpu0 time.Duration) *sampler {
	s := &sampler{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		prevAt, prevCPU := start, cpu0
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			mem, err := procMemory(pid)
			if err != nil {
				s.err = err
				return
			}
			s.rssMax = max(s.rssMax, mem.RSS)
			select {
			case <-s.quit:
				return
			case <-t.C:
			}
			_, cpu, err := procCPU(pid)
			at := time.Now()
			if err != nil {
				s.err = err
				return
			}
			if dt := at.Sub(prevAt); dt > 0 {
				s.cpuPeak = max(s.cpuPeak, (cpu-prevCPU).Seconds()/dt.Seconds())
			}
			prevAt, prevCPU = at, cpu
		}
	}()
	return s
}

// stop ends the sampling and returns the highest RSS and the busiest
// second's CPU in cores; later calls return the same.
func (s *sampler) stop() (uint64, float64, error) {
	if !s.once {
		s.once = true
		close(s.quit)
	}
	<-s.done
	return s.rssMax, s.cpuPeak, s.err
}
