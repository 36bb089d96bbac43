package faults

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/deploy"
	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/infra/influxdb"
	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/infra/prometheus"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/twin"
)

// Namespace holds the suite's applications.
const Namespace = "apps"

// lab is the testbed: control plane, twin, Prometheus, InfluxDB and the
// controller process, with what the suite knows of the controller's
// lifetimes.
type lab struct {
	cfg      Config
	log      *slog.Logger
	dir      string
	cl       *cluster.Cluster
	admin    client.Client
	prom     *prometheus.Local
	influx   *influxdb.Local
	reader   *trajectory.InfluxStore
	ctlArgs  []string
	ctlUser  string // the controller's user name, which the audit log records
	corrupt  *corrupter
	mpas     []string // namespace/name of the MPAs every step must reach
	teardown []func()

	mu      sync.Mutex
	ctl     *localproc.Process
	url     string // the controller's /metrics
	killing bool   // the suite is stopping the controller
	crashes int
	base    counters // of the controller's earlier lifetimes
	last    counters // the running controller's, last read
	crashed []string // log tails of crashes
}

// counters are the controller's own counts the suite reads.
type counters struct {
	recorded, abandoned float64
	goroutines          float64
	mpaSeries           int
}

func (c counters) plus(o counters) counters {
	return counters{recorded: c.recorded + o.recorded, abandoned: c.abandoned + o.abandoned}
}

func (l *lab) up(ctx context.Context) error {
	cfg := l.cfg
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	opts := generator.DefaultOptions()
	opts.Apps = cfg.MPAs
	apps, err := generator.Generate(opts, prof)
	if err != nil {
		return err
	}
	l.cl, err = cluster.Up(ctx, cluster.Config{Dir: filepath.Join(l.dir, "cluster"), Binaries: cfg.Binaries, Nodes: 4})
	if err != nil {
		return err
	}
	l.teardown = append(l.teardown, func() { _ = l.cl.Down(context.Background()) })
	rc, err := clientcmd.BuildConfigFromFlags("", l.cl.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 200, 400
	scheme, err := manager.Scheme()
	if err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	if l.admin, err = client.New(rc, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if err := deploy.InstallCRDs(ctx, l.admin, time.Minute); err != nil {
		return err
	}
	role, err := deploy.ControllerRole()
	if err != nil {
		return err
	}
	if err := deploy.Grant(ctx, l.admin, role, role.Name); err != nil {
		return err
	}
	ctlKubeconfig, err := l.cl.UserKubeconfig(role.Name, role.Name)
	if err != nil {
		return err
	}
	l.ctlUser = role.Name
	if err := l.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return err
	}
	for _, a := range apps {
		objs, err := generator.Build(a, generator.ManifestOptions{Namespace: Namespace, Recommender: v1alpha1.DefaultRecommenderName})
		if err != nil {
			return err
		}
		for _, o := range []client.Object{objs.AppConfig, objs.Deployment, objs.MPA} {
			if err := l.admin.Create(ctx, o); err != nil {
				return fmt.Errorf("faults: create %s: %w", o.GetName(), err)
			}
		}
		l.mpas = append(l.mpas, Namespace+"/"+objs.MPA.Name)
	}
	l.log.Info("faults: control plane and applications up", "mpas", len(l.mpas))

	if err := l.startTwin(ctx, rc, apps, prof); err != nil {
		return err
	}
	if l.influx, err = influxdb.Start(ctx, filepath.Join(l.dir, "influxdb")); err != nil {
		return err
	}
	l.teardown = append(l.teardown, func() { _ = l.influx.Stop() })
	if l.reader, err = trajectory.OpenInflux(ctx, l.influx.URL(), filepath.Join(l.dir, "reader-spool")); err != nil {
		return err
	}
	l.teardown = append(l.teardown, func() { _ = l.reader.Close() })

	addr, err := localproc.FreeLoopbackAddr()
	if err != nil {
		return err
	}
	l.url = "http://" + addr + "/metrics"
	l.ctlArgs = append(slices.Clone(l.cfg.Controller[1:]), "--kubeconfig="+ctlKubeconfig, "--prometheus="+l.prom.URL(),
		"--influx-url="+l.influx.URL(), "--store-dir="+filepath.Join(l.dir, "controller-store"),
		"--step="+cfg.Step.String(), "--metrics-addr="+addr, "--probe-addr=0")
	if err := l.startController(ctx); err != nil {
		return err
	}
	l.teardown = append(l.teardown, func() {
		l.mu.Lock()
		l.killing = true
		p := l.ctl
		l.mu.Unlock()
		if p != nil && !p.Exited() {
			_ = p.Stop(syscall.SIGTERM, 15*time.Second)
		}
	})
	go l.sample(ctx)
	return nil
}

func (l *lab) startTwin(ctx context.Context, rc *rest.Config, apps []generator.App, prof *calibration.Profile) error {
	shapes, err := generator.LoadShapes("", 10*time.Second, 1)
	if err != nil {
		return err
	}
	simApps, err := generator.SimApps(apps, shapes)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	tw, err := twin.New(cs, simApps, prof, twin.WithNamespace(Namespace), twin.WithTick(time.Second))
	if err != nil {
		return err
	}
	twinCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l.teardown = append(l.teardown, stop)
	go func() { _ = tw.Run(twinCtx) }()
	l.corrupt = &corrupter{inner: tw.Gatherer()}
	srv := httptest.NewServer(tw.HandlerFor(l.corrupt))
	l.teardown = append(l.teardown, srv.Close)
	l.prom, err = prometheus.Start(ctx, filepath.Join(l.dir, "prometheus"), prometheus.WithScrapeInterval(time.Second),
		prometheus.WithStaticTarget("twin", strings.TrimPrefix(srv.URL, "http://"), "/metrics"))
	if err != nil {
		return err
	}
	l.teardown = append(l.teardown, func() { _ = l.prom.Stop() })
	return l.prom.WaitForTarget(ctx, "twin")
}

// startController starts a controller process and waits for its metrics.
func (l *lab) startController(ctx context.Context) error {
	p, err := localproc.Start(l.cfg.Controller[0], l.ctlArgs, localproc.WithLogFileAppend(filepath.Join(l.dir, "controller.log")),
		localproc.WithProcessGroup())
	if err != nil {
		return fmt.Errorf("faults: controller: %w", err)
	}
	l.mu.Lock()
	l.ctl, l.killing, l.last = p, false, counters{}
	l.mu.Unlock()
	go l.watch(ctx, p)
	if err := p.WaitReady(ctx, time.Minute, 100*time.Millisecond, localproc.HTTPProbe(nil, l.url, http.StatusOK)); err != nil {
		return fmt.Errorf("faults: controller: %w", err)
	}
	return nil
}

// watch counts an exit the suite did not cause as a crash and starts the
// controller again.
func (l *lab) watch(ctx context.Context, p *localproc.Process) {
	<-p.Done()
	l.mu.Lock()
	if l.killing || l.ctl != p || ctx.Err() != nil {
		l.mu.Unlock()
		return
	}
	l.crashes++
	l.base = l.base.plus(l.last)
	l.crashed = append(l.crashed, p.LogTail(2000))
	l.mu.Unlock()
	l.log.Error("faults: the controller crashed; starting it again", "err", p.Err())
	if err := l.startController(ctx); err != nil {
		l.log.Error("faults: controller not restarted", "err", err)
	}
}

// sample reads the controller's counters twice a second, so that a crash
// loses at most half a second of them.
func (l *lab) sample(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.read(ctx)
	}
}

// read scrapes the running controller and returns its counters.
func (l *lab) read(ctx context.Context) (counters, error) {
	l.mu.Lock()
	p := l.ctl
	l.mu.Unlock()
	c, err := scrape(ctx, l.url)
	if err != nil {
		return c, err
	}
	l.mu.Lock()
	if l.ctl == p {
		l.last = c
	}
	l.mu.Unlock()
	return c, nil
}

// total is the counters over every lifetime of the controller, read now.
func (l *lab) total(ctx context.Context) (counters, error) {
	c, err := l.read(ctx)
	if err != nil {
		return counters{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.base.plus(c)
	t.goroutines, t.mpaSeries = c.goroutines, c.mpaSeries
	return t, nil
}

// kill SIGKILLs the controller after reading its counters (mid-round, its
// last record is counted) and starts it again.
func (l *lab) kill(ctx context.Context) error {
	c, err := l.read(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.killing = true
	p := l.ctl
	l.base = l.base.plus(c)
	l.mu.Unlock()
	if err := p.Stop(syscall.SIGKILL, 10*time.Second); err != nil {
		return err
	}
	return l.startController(ctx)
}

func scrape(ctx context.Context, url string) (counters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return counters{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return counters{}, err
	}
	defer resp.Body.Close()
	var c counters
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch {
		case name == "aware_controller_trajectory_steps_total":
			c.recorded = v
		case name == "aware_controller_trajectory_episodes_abandoned_total":
			c.abandoned = v
		case name == "go_goroutines":
			c.goroutines = v
		case strings.HasPrefix(name, "aware_controller_step_reward{"):
			c.mpaSeries++
		}
	}
	return c, sc.Err()
}

// midRound sleeps until the middle of the next round, when the round's
// steps are done and the next have not begun.
func (l *lab) midRound(ctx context.Context) (time.Time, error) {
	step := l.cfg.Step
	t := time.Now().Truncate(step).Add(step + step/2)
	return t, sleepUntil(ctx, t)
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// steps reads the trajectory steps of every MPA with Time in [from, to).
func (l *lab) steps(ctx context.Context, from, to time.Time) (map[string][]trajectory.Step, error) {
	out := make(map[string][]trajectory.Step, len(l.mpas))
	for _, app := range l.mpas {
		trs, err := l.reader.Range(ctx, app, from, to)
		if err != nil {
			return nil, err
		}
		for _, tr := range trs {
			out[app] = append(out[app], tr.Steps...)
		}
	}
	return out, nil
}

func (l *lab) close() {
	for i := len(l.teardown) - 1; i >= 0; i-- {
		l.teardown[i]()
	}
}
