package twin

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

const testNS = "apps"

func testProfile(t testing.TB) *calibration.Profile {
	t.Helper()
	prof, err := calibration.Default()
	require.NoError(t, err)
	return prof
}

// testApp is a compress-then-read application at rate requests/s.
func testApp(name string, rate float64) sim.App {
	return sim.App{
		Name:    name,
		Chain:   []segments.Spec{{Name: "compress", Size: 131072}, {Name: "readFile", Size: 131072}},
		Speed:   1,
		Noise:   0.05,
		SLO:     gym.SLO{Kind: gym.LatencySLO, Target: 0.5},
		Load:    sim.Load{Shape: []float64{1, 1.2, 0.8, 1.1}, Scale: rate},
		Initial: sim.Allocation{Replicas: 2, CPU: 1, Memory: 512 * gym.MiB},
	}
}

func appLabels(app string) map[string]string {
	return map[string]string{LabelName: app, "app.kubernetes.io/part-of": "aware"}
}

// deployment is a generated-style Deployment of app.
func deployment(name, app string) *appsv1.Deployment {
	replicas := int32(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("deploy-" + name), Labels: appLabels(app)},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: appLabels(app)},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: appLabels(app)}},
		},
	}
}

type podOpt func(*corev1.Pod)

// pod is a Running, Ready pod of app whose workload container has 1 CPU
// and 512 MiB in its spec and status.
func pod(app, name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("pod-" + name), Labels: appLabels(app)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: DefaultContainer, Image: "aware:test"}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: DefaultContainer, Ready: true}},
		},
	}
	withSpec("1", "512Mi")(p)
	withStatus("1", "512Mi")(p)
	for _, o := range opts {
		o(p)
	}
	return p
}

func limits(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

// withSpec sets the workload container's spec limits (and requests).
func withSpec(cpu, mem string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: limits(cpu, mem), Requests: limits(cpu, mem)}
	}
}

// withStatus sets the resources in the container's status; empty values
// leave the status without resources (not yet reported).
func withStatus(cpu, mem string) podOpt {
	return func(p *corev1.Pod) {
		if cpu == "" && mem == "" {
			p.Status.ContainerStatuses[0].Resources = nil
			return
		}
		p.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{Limits: limits(cpu, mem), Requests: limits(cpu, mem)}
	}
}

func pending(p *corev1.Pod) {
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
}

// clock is a hand-stepped wall clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// startTwin builds and starts a twin of apps on client with a hand clock.
func startTwin(t testing.TB, client kubernetes.Interface, apps []sim.App, opts ...Option) (*Twin, *clock) {
	t.Helper()
	c := newClock()
	opts = append([]Option{WithClock(c.Now), WithLogger(slog.New(slog.DiscardHandler)), WithWorkers(2)}, opts...)
	tw, err := New(client, apps, testProfile(t), opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, tw.Start(ctx))
	return tw, c
}

// eventually waits for the informer caches to show something.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cachedPod is the twin's cached copy of pod name (nil if absent).
func cachedPod(tw *Twin, name string) *corev1.Pod {
	o, ok, _ := tw.pods.GetByKey(testNS + "/" + name)
	if !ok {
		return nil
	}
	return o.(*corev1.Pod)
}

// scrape reads the twin's metrics in the text format.
func scrape(t testing.TB, tw *Twin) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	tw.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, rec.Code)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	require.NoError(t, err)
	return fams
}

// httpScrape reads metrics in the text format from url.
func httpScrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// series are the metrics of family name whose labels include want.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	f, ok := fams[name]
	if !ok {
		return nil
	}
	var out []*dto.Metric
	for _, m := range f.Metric {
		match := 0
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match == len(want) {
			out = append(out, m)
		}
	}
	return out
}

// value is the single value of family name with labels want.
func value(t testing.TB, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	ms := series(fams, name, want)
	require.Len(t, ms, 1, "%s%v", name, want)
	m := ms[0]
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	t.Fatalf("%s%v: no value", name, want)
	return 0
}

// podNames are the distinct pod labels in family name.
func podNames(fams map[string]*dto.MetricFamily, name string) map[string]bool {
	out := map[string]bool{}
	if f, ok := fams[name]; ok {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "pod" {
					out[l.GetValue()] = true
				}
			}
		}
	}
	return out
}
