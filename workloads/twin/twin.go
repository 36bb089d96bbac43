package twin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/server"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// appIndex indexes pods by namespace and application name.
const appIndex = "aware-app"

// Twin is the digital twin of a set of simulated applications on a
// cluster. Build it with New, then Run it (or Start it and call Tick).
type Twin struct {
	cfg    config
	log    *slog.Logger
	apps   []appState
	byName map[string]int
	bounds []float64

	factory informers.SharedInformerFactory
	deps    appslisters.DeploymentLister
	pods    cache.Indexer

	reg  *prometheus.Registry
	snap atomic.Pointer[snapshot]
	own  ownMetrics

	startOnce sync.Once
	startErr  error

	mu        sync.Mutex // serialises Tick
	last      time.Time
	tickNo    uint64
	tracked   []int
	selectors map[types.UID]cachedSelector
	fitters   []*bucketFitter
	scratch   [][]float64

	notedMu sync.Mutex
	noted   map[string]uint64 // log key → tick it was last seen
}

// appState is one application: its simulator, what the cluster showed at
// the last tick and the counters of its Running pods.
type appState struct {
	app               sim.App
	cl                *sim.Cluster
	diskRead, netRecv float64 // shares of disk reads and network receives
	dep               *appsv1.Deployment
	sel               labels.Selector
	pods              map[types.UID]*podCounters
	killNext          int
	snap              appSnapshot
}

// podCounters are one Running pod's cumulative counters.
type podCounters struct {
	cpu, fsRead, fsWrite, netRecv, netSent, oom float64
	received, processed, failed                 float64
	histSum, histCount                          float64
	buckets                                     []float64 // cumulative per bound
	workingSet                                  float64   // gauge
	seen                                        uint64
}

type cachedSelector struct {
	sel  labels.Selector
	seen uint64
}

// AppStatus is one tracked application after the last tick.
type AppStatus struct {
	App        string
	Namespace  string
	Deployment string
	// Allocation is what the twin read from the cluster: Replicas is the
	// number of Running pods, CPU and Memory the mean limits of their
	// workload containers (zero without Running pods).
	Allocation sim.Allocation
	// Advanced says the simulator stepped the application at the last
	// tick; without a Running pod its simulation is held.
	Advanced bool
	// Metrics is the simulator's last step of the application.
	Metrics gym.Metrics
	// Pods are the Running pods the application's usage was split over.
	Pods []string
}

// snapshot is what the metrics endpoint serves: immutable once stored.
type snapshot struct {
	apps   []appSnapshot
	bounds []float64
}

type appSnapshot struct {
	status AppStatus
	pods   []podSample
}

// podSample is one pod of a tracked application at the last tick.
type podSample struct {
	namespace, name, container string
	ready                      bool    // the Ready condition is True
	cpuLimit, memLimit         float64 // 0 when the container sets none
	running                    bool    // counters are set only for Running pods
	c                          podCounters
}

// New builds the twin of apps, modelled from prof, on the cluster behind
// client. Nothing is contacted until Start or Run.
func New(client kubernetes.Interface, apps []sim.App, prof *calibration.Profile, opts ...Option) (*Twin, error) {
	if client == nil {
		return nil, errors.New("twin: nil Kubernetes client")
	}
	if prof == nil {
		return nil, errors.New("twin: nil calibration profile")
	}
	if len(apps) == 0 {
		return nil, errors.New("twin: no applications")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("twin: %w", err)
	}
	t := &Twin{
		cfg:       cfg,
		log:       cfg.log,
		apps:      make([]appState, len(apps)),
		byName:    make(map[string]int, len(apps)),
		bounds:    slices.Clone(server.DurationBuckets),
		selectors: map[types.UID]cachedSelector{},
		noted:     map[string]uint64{},
	}
	simOpts := append([]sim.Option{sim.WithStep(cfg.simStep), sim.WithWorkers(1)}, cfg.simOpts...)
	obs := make([]float64, gym.StateDim)
	for i, a := range apps {
		if j, dup := t.byName[a.Name]; dup {
			return nil, fmt.Errorf("twin: apps[%d] and apps[%d] are both named %q", j, i, a.Name)
		}
		t.byName[a.Name] = i
		cl, err := sim.New(prof, []sim.App{a}, simOpts...)
		if err != nil {
			return nil, fmt.Errorf("twin: apps[%d]: %w", i, err)
		}
		// Each application draws its noise from its own stream.
		if err := cl.Reset(context.Background(), appSeed(cfg.seed, i), obs); err != nil {
			return nil, fmt.Errorf("twin: apps[%d] (%s): %w", i, a.Name, err)
		}
		rd, rx := ioShares(prof, a.Chain)
		t.apps[i] = appState{app: a, cl: cl, diskRead: rd, netRecv: rx, pods: map[types.UID]*podCounters{}}
	}
	for range cfg.workers {
		t.fitters = append(t.fitters, newBucketFitter(t.bounds))
		t.scratch = append(t.scratch, make([]float64, len(t.bounds)))
	}

	sel := cfg.selector
	t.factory = informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(cfg.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }),
		informers.WithTransform(dropManagedFields),
	)
	t.deps = t.factory.Apps().V1().Deployments().Lister()
	podInf := t.factory.Core().V1().Pods().Informer()
	if err := podInf.AddIndexers(cache.Indexers{appIndex: indexByApp}); err != nil {
		return nil, fmt.Errorf("twin: pod index: %w", err)
	}
	t.pods = podInf.GetIndexer()

	t.reg = prometheus.NewRegistry()
	t.own = newOwnMetrics(len(apps), cfg.simStep)
	if err := t.reg.Register(&collector{t: t}); err != nil {
		return nil, fmt.Errorf("twin: %w", err)
	}
	if err := t.own.register(t.reg); err != nil {
		return nil, fmt.Errorf("twin: %w", err)
	}
	t.snap.Store(&snapshot{bounds: t.bounds})
	return t, nil
}

// appSeed derives application i's noise seed from the twin's seed.
func appSeed(seed uint64, i int) uint64 {
	return (seed+1)*0x9E3779B97F4A7C15 ^ (uint64(i)+1)*0xBF58476D1CE4E5B9
}

// indexByApp keys a pod by namespace and its application label.
func indexByApp(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if v, ok := p.Labels[LabelName]; ok {
		return []string{p.Namespace + "/" + v}, nil
	}
	return nil, nil
}

// dropManagedFields trims what the twin never reads from cached objects.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// Handler serves the metrics in the Prometheus exposition formats.
func (t *Twin) Handler() http.Handler { return t.HandlerFor(t.reg) }

// Gatherer is what Handler serves; a fault test serves it altered through
// HandlerFor.
func (t *Twin) Gatherer() prometheus.Gatherer { return t.reg }

// HandlerFor serves what reg gathers as Handler serves the twin's metrics.
func (t *Twin) HandlerFor(reg prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(t.log.Handler(), slog.LevelError),
		// Thousands of pods make megabytes of text, scraped on loopback:
		// compressing them would cost more CPU than it saves.
		DisableCompression: true,
	})
}

// ShardHandler serves the workload series (not the twin's own metrics) of
// shard i of n: each application's pods in exactly one shard. A twin of
// thousands of pods exports hundreds of thousands of series; one scrape
// of them all can outlast the scrape interval, and a failed scrape leaves
// every pod without data for the step. Scraped as n targets, the shards
// are read in parallel, each within its timeout, as a real cluster's
// series come from one cAdvisor and kubelet per node.
func (t *Twin) ShardHandler(i, n int) (http.Handler, error) {
	if n < 1 || i < 0 || i >= n {
		return nil, fmt.Errorf("twin: shard %d of %d: want 0 ≤ shard < shards", i, n)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(&collector{t: t, shard: i, shards: n}); err != nil {
		return nil, fmt.Errorf("twin: %w", err)
	}
	return t.HandlerFor(reg), nil
}

// AppsPerShard is how many applications' series one scrape target serves
// in MountShards: at 1000 MPAs the pods grew to about 4900, whose 170 000
// series took 6.8 s to scrape in one piece against a 5 s timeout.
const AppsPerShard = 100

// MountShards serves the twin's workload series on mux in shards of
// AppsPerShard applications, at /metrics/shard/<i>, as a cluster's come from
// one kubelet per node, and returns the Prometheus scrape configuration
// (job "twin", each shard as instance twin-<i>) that scrapes them at addr.
func (t *Twin) MountShards(mux *http.ServeMux, addr string) (string, error) {
	shards := max(1, (len(t.apps)+AppsPerShard-1)/AppsPerShard)
	var scrape strings.Builder
	scrape.WriteString("- job_name: twin\n  static_configs:\n")
	for i := range shards {
		h, err := t.ShardHandler(i, shards)
		if err != nil {
			return "", err
		}
		path := fmt.Sprintf("/metrics/shard/%d", i)
		mux.Handle(path, h)
		fmt.Fprintf(&scrape, "  - targets: [%q]\n    labels: {__metrics_path__: %q, instance: %q}\n", addr, path, fmt.Sprintf("twin-%d", i))
	}
	return scrape.String(), nil
}

// Registry is the registry behind Handler, for callers that serve more.
func (t *Twin) Registry() *prometheus.Registry { return t.reg }

// Status lists the tracked applications after the last tick, in the
// order of their Deployments (namespace, name). It must not be modified.
func (t *Twin) Status() []AppStatus {
	s := t.snap.Load()
	out := make([]AppStatus, len(s.apps))
	for i := range s.apps {
		out[i] = s.apps[i].status
	}
	return out
}

// Start starts the informers, bound to ctx, and waits for their caches to
// fill. Run calls it; later calls return the first one's result.
func (t *Twin) Start(ctx context.Context) error {
	t.startOnce.Do(func() {
		t.factory.Start(ctx.Done())
		for typ, ok := range t.factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				t.startErr = fmt.Errorf("twin: the %v cache did not sync: %w", typ, context.Cause(ctx))
				return
			}
		}
		t.log.Info("twin: watching", "namespace", cmp.Or(t.cfg.namespace, "(all)"), "selector", t.cfg.selector, "apps", len(t.apps))
	})
	return t.startErr
}

// Inject applies instability scenario s (paper §2.3: a payload change or a
// load step) to application app from its next tick on, as
// sim.Cluster.Inject does in the simulator. The change stays until the
// twin is rebuilt.
func (t *Twin) Inject(app string, s sim.Scenario) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.byName[app]
	if !ok {
		return fmt.Errorf("twin: inject %s: unknown application %q", s, app)
	}
	if err := t.apps[i].cl.Inject(0, s); err != nil {
		return fmt.Errorf("twin: %w", err)
	}
	t.log.Info("twin: scenario injected", "app", app, "scenario", s.String())
	return nil
}

// Run serves the metrics on the configured address (if any), starts the
// informers and ticks every configured interval until ctx ends, when it
// returns nil.
func (t *Twin) Run(ctx context.Context) error {
	var served chan error
	if t.cfg.addr != "" {
		ln, err := net.Listen("tcp", t.cfg.addr)
		if err != nil {
			return fmt.Errorf("twin: metrics address: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", t.Handler())
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		served = make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		t.log.Info("twin: serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	if err := t.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ticker := time.NewTicker(t.cfg.tick)
	defer ticker.Stop()
	for {
		if err := t.Tick(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return fmt.Errorf("twin: metrics server: %w", err)
		case <-ticker.C:
		}
	}
}

// Tick reads every application's allocation from the informer caches,
// advances the simulator one step for each application with a Running
// pod, grows its pods' counters by the step's rates times the wall-clock
// time since the last tick (the tick interval at the first), and
// publishes the snapshot the metrics endpoint serves. Start must have
// been called.
//
// The allocation is the number of Running (not terminating) pods matched
// by the Deployment's selector and the mean of their workload containers'
// CPU and memory limits: during a rollout or while pods are resized one by
// one the sizes differ, and the simulator, which models one pod size per
// application, gets the mean (the total capacity is right). The simulator
// clamps it to its bounds (gym.DefaultBounds unless set through
// WithSimOptions); the exported limits are the pods' own. An application
// whose Deployment is missing or has no Running pod is not advanced: its
// simulated time and trace position hold until it runs again.
func (t *Twin) Tick(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	began := time.Now()
	now := t.cfg.now()
	dt := t.cfg.tick.Seconds()
	if !t.last.IsZero() {
		dt = math.Max(0, now.Sub(t.last).Seconds())
	}
	t.last = now
	t.tickNo++

	t.assign()
	var failed atomic.Pointer[error]
	t.parallel(t.tracked, func(w, i int) {
		if err := t.stepApp(ctx, w, i, dt); err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	})
	if p := failed.Load(); p != nil {
		return fmt.Errorf("twin: tick: %w", *p)
	}
	snap := &snapshot{apps: make([]appSnapshot, 0, len(t.tracked)), bounds: t.bounds}
	advanced, running := 0, 0
	for _, i := range t.tracked {
		a := &t.apps[i]
		snap.apps = append(snap.apps, a.snap)
		if a.snap.status.Advanced {
			advanced++
		}
		running += len(a.snap.status.Pods)
	}
	t.snap.Store(snap)
	t.own.ticks.Inc()
	t.own.duration.Observe(time.Since(began).Seconds())
	t.own.tracked.Set(float64(len(t.tracked)))
	t.own.advanced.Set(float64(advanced))
	t.own.running.Set(float64(running))
	return nil
}

// assign maps the cached Deployments to applications (the first in
// namespace/name order wins an application) and drops the counters of
// applications that lost theirs.
func (t *Twin) assign() {
	for i := range t.apps {
		t.apps[i].dep, t.apps[i].sel = nil, nil
	}
	deps, _ := t.deps.List(labels.Everything())
	slices.SortFunc(deps, func(a, b *appsv1.Deployment) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	t.tracked = t.tracked[:0]
	for _, d := range deps {
		key := d.Namespace + "/" + d.Name
		i, ok := t.byName[d.Labels[LabelName]]
		if !ok {
			i, ok = t.byName[d.Name]
		}
		if !ok {
			t.note(slog.LevelDebug, "unknown "+key, "twin: ignoring a Deployment of no known application", "deployment", key)
			continue
		}
		a := &t.apps[i]
		if a.dep != nil {
			t.note(slog.LevelWarn, "duplicate "+key, "twin: ignoring a second Deployment of an application",
				"app", a.app.Name, "deployment", key, "tracking", a.dep.Namespace+"/"+a.dep.Name)
			continue
		}
		sel, err := t.selector(d)
		if err != nil {
			t.note(slog.LevelWarn, "selector "+key, "twin: ignoring a Deployment with an invalid selector", "deployment", key, "err", err)
			continue
		}
		a.dep, a.sel = d, sel
		t.tracked = append(t.tracked, i)
	}
	for i := range t.apps {
		if a := &t.apps[i]; a.dep == nil && len(a.pods) > 0 {
			clear(a.pods)
		}
	}
	for uid, s := range t.selectors {
		if s.seen != t.tickNo {
			delete(t.selectors, uid)
		}
	}
	t.notedMu.Lock()
	for k, seen := range t.noted {
		if seen+1 < t.tickNo { // noted again while it lasts, forgotten once gone
			delete(t.noted, k)
		}
	}
	t.notedMu.Unlock()
}

// selector is d's pod selector, cached by UID (it is immutable).
func (t *Twin) selector(d *appsv1.Deployment) (labels.Selector, error) {
	if s, ok := t.selectors[d.UID]; ok && d.UID != "" {
		s.seen = t.tickNo
		t.selectors[d.UID] = s
		return s.sel, nil
	}
	if d.Spec.Selector == nil {
		return nil, errors.New("no selector")
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	if sel.Empty() {
		return nil, errors.New("empty selector")
	}
	t.selectors[d.UID] = cachedSelector{sel: sel, seen: t.tickNo}
	return sel, nil
}

// note logs a message once per key while the key keeps being noted.
func (t *Twin) note(level slog.Level, key, msg string, args ...any) {
	t.notedMu.Lock()
	_, seen := t.noted[key]
	t.noted[key] = t.tickNo
	t.notedMu.Unlock()
	if !seen {
		t.log.Log(context.Background(), level, msg, args...)
	}
}

// parallel runs f(worker, app) for apps on the configured workers.
func (t *Twin) parallel(apps []int, f func(w, i int)) {
	n := len(apps)
	w := min(t.cfg.workers, max(1, n/32))
	if w <= 1 {
		for _, i := range apps {
			f(0, i)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + w - 1) / w
	for k := range w {
		lo, hi := k*chunk, min(n, (k+1)*chunk)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, i := range apps[lo:hi] {
				f(k, i)
			}
		}()
	}
	wg.Wait()
}

// stepApp reads application i's pods, advances its simulation if any is
// Running, grows their counters and builds its snapshot. It touches only
// application i's state and worker w's scratch space.
func (t *Twin) stepApp(ctx context.Context, w, i int, dt float64) error {
	a := &t.apps[i]
	pods := t.podsOf(a.dep, a.sel)
	samples := make([]podSample, 0, len(pods))
	running := make([]types.UID, 0, len(pods))
	var sumCPU, sumMem float64
	var nCPU, nMem int
	for _, p := range pods {
		name, cpu, mem, ok := workload(p, t.cfg.container)
		if !ok {
			t.note(slog.LevelWarn, "container "+a.dep.Namespace+"/"+a.dep.Name, "twin: pods without the workload container are not counted",
				"deployment", a.dep.Namespace+"/"+a.dep.Name, "pod", p.Name, "container", t.cfg.container)
			continue
		}
		s := podSample{namespace: p.Namespace, name: p.Name, container: name, ready: isReady(p), cpuLimit: cpu, memLimit: mem}
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			s.running = true
			running = append(running, p.UID)
			if cpu > 0 {
				sumCPU, nCPU = sumCPU+cpu, nCPU+1
			}
			if mem > 0 {
				sumMem, nMem = sumMem+mem, nMem+1
			}
		}
		samples = append(samples, s)
	}
	st := AppStatus{App: a.app.Name, Namespace: a.dep.Namespace, Deployment: a.dep.Name, Metrics: a.cl.Metrics(0)}
	n := len(running)
	if n == 0 {
		clear(a.pods)
		a.snap = appSnapshot{status: st, pods: samples}
		return nil
	}

	// The allocation: Running pods, and their containers' mean limits
	// (mixed during a rollout or a resize); pods without a limit count
	// for nothing, and without any the simulator keeps its own.
	alloc := a.cl.Allocation(0)
	alloc.Replicas = n
	if nCPU > 0 {
		alloc.CPU = sumCPU / float64(nCPU)
	}
	if nMem > 0 {
		alloc.Memory = sumMem / float64(nMem)
	}
	st.Allocation = sim.Allocation{Replicas: n}
	if nCPU > 0 {
		st.Allocation.CPU = alloc.CPU
	}
	if nMem > 0 {
		st.Allocation.Memory = alloc.Memory
	}
	a.cl.Set(0, alloc)
	if err := a.cl.Advance(ctx); err != nil {
		return err
	}
	m := a.cl.Metrics(0)
	st.Metrics, st.Advanced = m, true
	st.Pods = make([]string, 0, n)

	// Split the application's rates evenly over its Running pods, times
	// the wall-clock time since the last tick.
	per := dt / float64(n)
	g := t.scratch[w]
	mean := 0.0
	reqs := m.ProcessedRate * per
	if reqs > 0 {
		mean, _ = t.fitters[w].fit(g, m.LatencyP50, m.LatencyP95, m.LatencyP99)
	}
	nb := len(t.bounds)
	buckets := make([]float64, n*nb)
	r := 0
	for k := range samples {
		s := &samples[k]
		if !s.running {
			continue
		}
		uid := running[r]
		pc := a.pods[uid]
		if pc == nil {
			pc = &podCounters{buckets: make([]float64, nb)}
			a.pods[uid] = pc
		}
		pc.seen = t.tickNo
		pc.cpu += m.CPUUsage * per
		pc.fsRead += m.IORate * a.diskRead * per
		pc.fsWrite += m.IORate * (1 - a.diskRead) * per
		pc.netRecv += m.NetRate * a.netRecv * per
		pc.netSent += m.NetRate * (1 - a.netRecv) * per
		pc.received += m.ArrivalRate * per
		pc.processed += reqs
		pc.failed += m.DroppedRate * per
		if reqs > 0 {
			for b := range nb {
				pc.buckets[b] += reqs * g[b]
			}
			pc.histCount += reqs
			pc.histSum += reqs * mean
		}
		pc.workingSet = m.MemoryUsage / float64(n)
		pc.oom += float64(oomShare(r, n, a.killNext, m.OOMKills))
		s.c = *pc
		s.c.buckets = buckets[r*nb : (r+1)*nb : (r+1)*nb]
		copy(s.c.buckets, pc.buckets)
		st.Pods = append(st.Pods, s.name)
		r++
	}
	a.killNext += m.OOMKills
	for uid, pc := range a.pods {
		if pc.seen != t.tickNo {
			delete(a.pods, uid)
		}
	}
	a.snap = appSnapshot{status: st, pods: samples}
	return nil
}

// oomShare is how many of a step's kills go to Running pod r of n: kill j
// goes to pod (start + j) mod n, start counting every kill so far, so the
// kills go round the pods.
func oomShare(r, n, start, kills int) int {
	s := kills / n
	if (r-start%n+n)%n < kills%n {
		s++
	}
	return s
}

// podsOf lists d's pods from the cache: those its selector matches, looked
// up by application name when the selector pins it.
func (t *Twin) podsOf(d *appsv1.Deployment, sel labels.Selector) []*corev1.Pod {
	var objs []any
	if v, ok := sel.RequiresExactMatch(LabelName); ok {
		objs, _ = t.pods.ByIndex(appIndex, d.Namespace+"/"+v)
	} else {
		objs, _ = t.pods.ByIndex(cache.NamespaceIndex, d.Namespace)
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && sel.Matches(labels.Set(p.Labels)) {
			pods = append(pods, p)
		}
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// workload finds p's workload container (by name, or the only one) and
// its CPU (cores) and memory (bytes) limits as applied: from the
// container's status resources, which follow an in-place resize once the
// kubelet (or kwok) actuates it, else from the spec; 0 when unset.
func workload(p *corev1.Pod, container string) (name string, cpu, mem float64, ok bool) {
	var c *corev1.Container
	for k := range p.Spec.Containers {
		if p.Spec.Containers[k].Name == container {
			c = &p.Spec.Containers[k]
			break
		}
	}
	if c == nil {
		if len(p.Spec.Containers) != 1 {
			return "", 0, 0, false
		}
		c = &p.Spec.Containers[0]
	}
	limits := []corev1.ResourceList{c.Resources.Limits}
	for k := range p.Status.ContainerStatuses {
		if cs := &p.Status.ContainerStatuses[k]; cs.Name == c.Name && cs.Resources != nil {
			limits = append(limits, cs.Resources.Limits) // later wins
		}
	}
	for _, l := range limits {
		if q, ok := l[corev1.ResourceCPU]; ok {
			cpu = q.AsApproximateFloat64()
		}
		if q, ok := l[corev1.ResourceMemory]; ok {
			mem = q.AsApproximateFloat64()
		}
	}
	return c.Name, cpu, mem, true
}

// isReady says whether p's Ready condition is True.
func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
