package twin

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/server"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

func TestNewRejectsBadInput(t *testing.T) {
	prof := testProfile(t)
	client := fake.NewClientset()
	apps := []sim.App{testApp("a", 10)}
	bad := testApp("b", 10)
	bad.Chain = []segments.Spec{{Name: "noSuchSegment", Size: 1}}
	for _, tc := range []struct {
		name string
		err  string
		new  func() (*Twin, error)
	}{
		{"nil client", "nil Kubernetes client", func() (*Twin, error) { return New(nil, apps, prof) }},
		{"nil profile", "nil calibration profile", func() (*Twin, error) { return New(client, apps, nil) }},
		{"no apps", "no applications", func() (*Twin, error) { return New(client, nil, prof) }},
		{"duplicate names", `apps[0] and apps[1] are both named "a"`, func() (*Twin, error) {
			return New(client, []sim.App{testApp("a", 1), testApp("a", 2)}, prof)
		}},
		{"uncalibrated segment", "apps[1]", func() (*Twin, error) { return New(client, append(apps, bad), prof) }},
		{"selector", `selector "a b c"`, func() (*Twin, error) { return New(client, apps, prof, WithSelector("a b c")) }},
		{"tick", "tick 0s", func() (*Twin, error) { return New(client, apps, prof, WithTick(0)) }},
		{"sim step", "simulator step 10ms", func() (*Twin, error) { return New(client, apps, prof, WithSimStep(10*time.Millisecond)) }},
		{"container", "container: empty", func() (*Twin, error) { return New(client, apps, prof, WithContainer("")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tw, err := tc.new()
			require.Error(t, err)
			assert.Nil(t, tw)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// TestAllocationFromCluster checks what the twin reads as an application's
// allocation: Running pods only, each container's limits from its status
// when reported (an in-place resize that took effect) else from its spec,
// and the mean over pods of mixed sizes.
func TestAllocationFromCluster(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct {
		name     string
		pods     []runtime.Object
		want     sim.Allocation
		wantPods map[string][2]float64 // exported CPU and memory limits
	}{
		{
			name: "status wins over spec",
			pods: []runtime.Object{pod("a", "a-1", withSpec("500m", "256Mi"), withStatus("1500m", "768Mi"))},
			want: sim.Allocation{Replicas: 1, CPU: 1.5, Memory: 768 * mi},
			wantPods: map[string][2]float64{
				"a-1": {1.5, 768 * mi},
			},
		},
		{
			name: "spec when the status has no resources",
			pods: []runtime.Object{pod("a", "a-1", withSpec("750m", "1Gi"), withStatus("", ""))},
			want: sim.Allocation{Replicas: 1, CPU: 0.75, Memory: 1024 * mi},
			wantPods: map[string][2]float64{
				"a-1": {0.75, 1024 * mi},
			},
		},
		{
			name: "per resource: status CPU, spec memory",
			pods: []runtime.Object{pod("a", "a-1", withSpec("750m", "1Gi"), withStatus("250m", ""))},
			want: sim.Allocation{Replicas: 1, CPU: 0.25, Memory: 1024 * mi},
		},
		{
			name: "mixed sizes during a rollout: the mean",
			pods: []runtime.Object{
				pod("a", "a-1", withSpec("500m", "512Mi"), withStatus("500m", "512Mi")),
				pod("a", "a-2", withSpec("1", "1Gi"), withStatus("1", "1Gi")),
				pod("a", "a-3", withSpec("1500m", "1536Mi"), withStatus("", "")),
			},
			want: sim.Allocation{Replicas: 3, CPU: 1, Memory: 1024 * mi},
			wantPods: map[string][2]float64{
				"a-1": {0.5, 512 * mi}, "a-2": {1, 1024 * mi}, "a-3": {1.5, 1536 * mi},
			},
		},
		{
			name: "pending and terminating pods are not replicas",
			pods: []runtime.Object{
				pod("a", "a-1"),
				pod("a", "a-2", pending, withSpec("2", "2Gi")),
				pod("a", "a-3", withSpec("2", "2Gi"), withStatus("2", "2Gi"), func(p *corev1.Pod) {
					now := metav1.Now()
					p.DeletionTimestamp = &now
				}),
			},
			want: sim.Allocation{Replicas: 1, CPU: 1, Memory: 512 * mi},
			wantPods: map[string][2]float64{
				"a-1": {1, 512 * mi}, "a-2": {2, 2048 * mi}, "a-3": {2, 2048 * mi},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]runtime.Object{deployment("a", "a")}, tc.pods...)
			tw, _ := startTwin(t, fake.NewClientset(objs...), []sim.App{testApp("a", 20)})
			require.NoError(t, tw.Tick(t.Context()))
			st := tw.Status()
			require.Len(t, st, 1)
			assert.Equal(t, "a", st[0].App)
			assert.True(t, st[0].Advanced)
			assert.Equal(t, tc.want.Replicas, st[0].Allocation.Replicas)
			assert.InDelta(t, tc.want.CPU, st[0].Allocation.CPU, 1e-9)
			assert.InDelta(t, tc.want.Memory, st[0].Allocation.Memory, 1)
			// The simulator got it (within its bounds, which these are).
			got := tw.apps[0].cl.Allocation(0)
			assert.Equal(t, tc.want.Replicas, got.Replicas)
			assert.InDelta(t, tc.want.CPU, got.CPU, 1e-9)
			assert.InDelta(t, tc.want.Memory, got.Memory, 1)
			assert.Equal(t, tc.want.Replicas, st[0].Metrics.Replicas)

			fams := scrape(t, tw)
			for name, lim := range tc.wantPods {
				assert.InDelta(t, lim[0], value(t, fams, "kube_pod_container_resource_limits",
					map[string]string{"pod": name, "container": DefaultContainer, "resource": "cpu", "unit": "core"}), 1e-9, name)
				assert.InDelta(t, lim[1], value(t, fams, "kube_pod_container_resource_limits",
					map[string]string{"pod": name, "container": DefaultContainer, "resource": "memory", "unit": "byte"}), 1, name)
			}
			// Usage series only for the Running pods the usage was split over.
			assert.Len(t, podNames(fams, "container_cpu_usage_seconds_total"), tc.want.Replicas)
			assert.Len(t, st[0].Pods, tc.want.Replicas)
		})
	}
}

// TestCountersFollowSimulatorRates drives two applications through ticks
// of uneven wall-clock length and checks that every counter is monotone
// and grows by the simulator's rate times the wall time, split evenly
// over the Running pods, so Prometheus's rate() gives the simulated usage.
func TestCountersFollowSimulatorRates(t *testing.T) {
	objs := []runtime.Object{
		deployment("a", "a"), pod("a", "a-1"), pod("a", "a-2"),
		deployment("b", "b"), pod("b", "b-1"), pod("b", "b-2"), pod("b", "b-3", withSpec("500m", "1Gi"), withStatus("500m", "1Gi")),
	}
	apps := []sim.App{testApp("a", 40), testApp("b", 150)}
	apps[1].Chain = []segments.Spec{{Name: "objectRead", Size: 131072}, {Name: "writeFile", Size: 131072}}
	tw, clk := startTwin(t, fake.NewClientset(objs...), apps, WithTick(time.Second))

	type reading map[string]float64
	counters := []string{
		"container_cpu_usage_seconds_total", "container_fs_reads_bytes_total", "container_fs_writes_bytes_total",
		"container_network_receive_bytes_total", "container_network_transmit_bytes_total", "container_oom_events_total",
		"aware_workload_requests_received_total", "aware_workload_requests_processed_total", "aware_workload_requests_failed_total",
		"aware_workload_request_duration_seconds",
	}
	read := func(pod string) reading {
		fams := scrape(t, tw)
		r := reading{}
		for _, c := range counters {
			r[c] = value(t, fams, c, map[string]string{"namespace": testNS, "pod": pod})
		}
		r["sum"] = series(fams, "aware_workload_request_duration_seconds", map[string]string{"pod": pod})[0].Histogram.GetSampleSum()
		r["ws"] = value(t, fams, "container_memory_working_set_bytes", map[string]string{"pod": pod, "container": DefaultContainer})
		return r
	}
	pods := map[string][]string{"a": {"a-1", "a-2"}, "b": {"b-1", "b-2", "b-3"}}
	prev := map[string]reading{}
	for _, p := range []string{"a-1", "a-2", "b-1", "b-2", "b-3"} {
		prev[p] = reading{}
	}
	for k, dt := range []time.Duration{time.Second, time.Second, 2500 * time.Millisecond, 700 * time.Millisecond, time.Second} {
		if k > 0 {
			clk.advance(dt)
		}
		require.NoError(t, tw.Tick(t.Context()))
		secs := dt.Seconds() // the first tick counts one tick interval
		for _, st := range tw.Status() {
			m := st.Metrics
			n := float64(len(pods[st.App]))
			require.Equal(t, len(pods[st.App]), st.Allocation.Replicas)
			io := tw.apps[tw.byName[st.App]]
			for _, p := range pods[st.App] {
				cur := read(p)
				for c, v := range cur {
					if c != "ws" {
						require.GreaterOrEqual(t, v, prev[p][c], "%s of %s decreased at tick %d", c, p, k)
					}
				}
				rate := func(c string) float64 { return (cur[c] - prev[p][c]) / secs }
				tol := func(want float64) float64 { return 1e-9 * math.Max(1, want) }
				assert.InDelta(t, m.CPUUsage/n, rate("container_cpu_usage_seconds_total"), tol(m.CPUUsage), "cpu %s tick %d", p, k)
				assert.InDelta(t, m.IORate*io.diskRead/n, rate("container_fs_reads_bytes_total"), tol(m.IORate))
				assert.InDelta(t, m.IORate/n, rate("container_fs_reads_bytes_total")+rate("container_fs_writes_bytes_total"), tol(m.IORate))
				assert.InDelta(t, m.NetRate/n, rate("container_network_receive_bytes_total")+rate("container_network_transmit_bytes_total"), tol(m.NetRate))
				assert.InDelta(t, m.ArrivalRate/n, rate("aware_workload_requests_received_total"), tol(m.ArrivalRate))
				assert.InDelta(t, m.ProcessedRate/n, rate("aware_workload_requests_processed_total"), tol(m.ProcessedRate))
				assert.InDelta(t, m.DroppedRate/n, rate("aware_workload_requests_failed_total"), tol(m.DroppedRate))
				// The histogram counts whole requests: its count trails the
				// processed counter by less than one.
				assert.InDelta(t, cur["aware_workload_requests_processed_total"], cur["aware_workload_request_duration_seconds"], 1)
				assert.InDelta(t, m.MemoryUsage/n, cur["ws"], 1e-6*m.MemoryUsage)
				assert.Greater(t, rate("aware_workload_request_duration_seconds")+1/secs, 0.0)
				assert.Greater(t, cur["sum"], 0.0)
				prev[p] = cur
			}
			assert.Positive(t, m.CPUUsage, st.App)
			assert.Positive(t, m.ProcessedRate, st.App)
		}
	}
	// b reads objects and writes files: mostly receives, mostly writes.
	b := tw.apps[tw.byName["b"]]
	assert.Greater(t, b.netRecv, 0.9)
	assert.Less(t, b.diskRead, 0.1)
}

// histogramDelta reads the request-duration histogram of pods, summed,
// as cumulative counts per bound and +Inf.
func histogramDelta(t *testing.T, tw *Twin, pods ...string) []float64 {
	t.Helper()
	fams := scrape(t, tw)
	bounds := server.DurationBuckets
	cum := make([]float64, len(bounds)+1)
	for _, p := range pods {
		h := series(fams, "aware_workload_request_duration_seconds", map[string]string{"pod": p})[0].Histogram
		for b, bk := range h.Bucket {
			if math.IsInf(bk.GetUpperBound(), 1) {
				continue // the parser adds +Inf
			}
			require.Equal(t, bounds[b], bk.GetUpperBound())
			cum[b] += float64(bk.GetCumulativeCount())
		}
		cum[len(bounds)] += float64(h.GetSampleCount())
	}
	return cum
}

func sub(a, b []float64) []float64 {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

// TestHistogramReproducesSimulatedQuantiles checks that
// histogram_quantile over the pods' bucket increments (as
// sum by (le) (rate(...)) would give it) is the simulator's p50, p95 and
// p99: exactly (up to whole-request rounding) where the fitter places a
// quantile, and within its bucket otherwise, both for a steady state over
// many ticks and for single noisy ticks.
func TestHistogramReproducesSimulatedQuantiles(t *testing.T) {
	bounds := server.DurationBuckets
	fitter := newBucketFitter(bounds)
	g := make([]float64, len(bounds))

	t.Run("steady", func(t *testing.T) {
		app := testApp("a", 220) // about 85 % of 2 cores: queueing spreads the latency
		app.Noise = 0
		app.Load.Shape = []float64{1}
		tw, clk := startTwin(t, fake.NewClientset(deployment("a", "a"), pod("a", "a-1"), pod("a", "a-2")), []sim.App{app})
		for range 3 {
			require.NoError(t, tw.Tick(t.Context()))
			clk.advance(time.Second)
		}
		m := tw.Status()[0].Metrics
		_, exact := fitter.fit(g, m.LatencyP50, m.LatencyP95, m.LatencyP99)
		require.NotZero(t, exact, "some quantile fits the buckets exactly: %+v", m)
		// The counters before flooring, summed over the pods.
		exactCounts := func() []float64 {
			cum := make([]float64, len(bounds)+1)
			for _, pc := range tw.apps[0].pods {
				for b := range bounds {
					cum[b] += pc.buckets[b]
				}
				cum[len(bounds)] += pc.histCount
			}
			return cum
		}
		from, fromExact := histogramDelta(t, tw, "a-1", "a-2"), exactCounts()
		for range 10 {
			require.NoError(t, tw.Tick(t.Context()))
			clk.advance(time.Second)
			require.Equal(t, m, tw.Status()[0].Metrics, "a steady state")
		}
		delta, deltaExact := sub(histogramDelta(t, tw, "a-1", "a-2"), from), sub(exactCounts(), fromExact)
		require.Greater(t, delta[len(bounds)], 2000.0)
		for i, want := range []float64{m.LatencyP50, m.LatencyP95, m.LatencyP99} {
			got := promQuantile(latencyLevels[i], bounds, delta)
			if exact&(1<<i) != 0 {
				assert.InEpsilon(t, want, promQuantile(latencyLevels[i], bounds, deltaExact), 1e-9, "q%g before rounding", latencyLevels[i])
			}
			t.Logf("q%g: simulated %.4f s, from the exported histogram %.4f s", latencyLevels[i], want, got)
			if exact&(1<<i) != 0 {
				// Up to whole-request rounding: each pod's cumulative
				// counts are floored, moving a rank by at most two
				// requests per pod within the quantile's bucket.
				j := sort.SearchFloat64s(bounds, want)
				inBucket := delta[j]
				if j > 0 {
					inBucket -= delta[j-1]
				}
				assert.InDelta(t, want, got, bucketWidth(bounds, want)*4/inBucket, "q%g", latencyLevels[i])
			} else {
				assert.InDelta(t, want, got, bucketWidth(bounds, want), "q%g", latencyLevels[i])
			}
		}
	})

	t.Run("noisy ticks", func(t *testing.T) {
		tw, clk := startTwin(t, fake.NewClientset(deployment("a", "a"), pod("a", "a-1"), pod("a", "a-2")), []sim.App{testApp("a", 220)})
		prev := make([]float64, len(bounds)+1)
		for k := range 12 {
			require.NoError(t, tw.Tick(t.Context()))
			clk.advance(time.Second)
			m := tw.Status()[0].Metrics
			cum := histogramDelta(t, tw, "a-1", "a-2")
			delta := sub(cum, prev)
			prev = cum
			require.Greater(t, delta[len(bounds)], 100.0, "requests in the tick")
			for i, want := range []float64{m.LatencyP50, m.LatencyP95, m.LatencyP99} {
				assert.InDelta(t, want, promQuantile(latencyLevels[i], bounds, delta), bucketWidth(bounds, want), "tick %d q%g", k, latencyLevels[i])
			}
		}
	})
}

// TestDeletedPodsAndDeployments checks that the series of a deleted pod
// disappear while the others keep counting, and that an application whose
// Deployment goes away drops out and returns when it comes back.
func TestDeletedPodsAndDeployments(t *testing.T) {
	client := fake.NewClientset(deployment("a", "a"), pod("a", "a-1"), pod("a", "a-2"), pod("a", "a-3"))
	tw, clk := startTwin(t, client, []sim.App{testApp("a", 30)})
	ctx := t.Context()
	require.NoError(t, tw.Tick(ctx))
	fams := scrape(t, tw)
	assert.Equal(t, map[string]bool{"a-1": true, "a-2": true, "a-3": true}, podNames(fams, "container_cpu_usage_seconds_total"))
	before := value(t, fams, "container_cpu_usage_seconds_total", map[string]string{"pod": "a-1"})

	require.NoError(t, client.CoreV1().Pods(testNS).Delete(ctx, "a-2", metav1.DeleteOptions{}))
	eventually(t, "a-2 gone from the cache", func() bool { return cachedPod(tw, "a-2") == nil })
	clk.advance(time.Second)
	require.NoError(t, tw.Tick(ctx))
	fams = scrape(t, tw)
	for name := range fams {
		assert.NotContains(t, podNames(fams, name), "a-2", name)
	}
	assert.Equal(t, map[string]bool{"a-1": true, "a-3": true}, podNames(fams, "container_cpu_usage_seconds_total"))
	assert.Greater(t, value(t, fams, "container_cpu_usage_seconds_total", map[string]string{"pod": "a-1"}), before, "a-1 keeps counting")
	assert.Equal(t, 2, tw.Status()[0].Allocation.Replicas)

	require.NoError(t, client.AppsV1().Deployments(testNS).Delete(ctx, "a", metav1.DeleteOptions{}))
	_, err := tw.deps.Deployments(testNS).Get("a")
	eventually(t, "the Deployment gone from the cache", func() bool {
		_, err = tw.deps.Deployments(testNS).Get("a")
		return err != nil
	})
	held := tw.apps[0].cl.Metrics(0)
	clk.advance(time.Second)
	require.NoError(t, tw.Tick(ctx))
	assert.Empty(t, tw.Status())
	fams = scrape(t, tw)
	assert.Empty(t, podNames(fams, "container_cpu_usage_seconds_total"))
	assert.Empty(t, podNames(fams, "kube_pod_status_ready"))
	assert.Equal(t, held, tw.apps[0].cl.Metrics(0), "an application without a Deployment is not advanced")

	_, err = client.AppsV1().Deployments(testNS).Create(ctx, deployment("a", "a"), metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, "the Deployment back in the cache", func() bool {
		_, err = tw.deps.Deployments(testNS).Get("a")
		return err == nil
	})
	clk.advance(time.Second)
	require.NoError(t, tw.Tick(ctx))
	require.Len(t, tw.Status(), 1)
	assert.True(t, tw.Status()[0].Advanced)
	assert.Len(t, podNames(scrape(t, tw), "container_cpu_usage_seconds_total"), 2)
}

// recorder is a slog handler that keeps the records.
type recorder struct {
	buf *bytes.Buffer
	slog.Handler
}

func newRecorder() *recorder {
	var b bytes.Buffer
	return &recorder{buf: &b, Handler: slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})}
}

// TestUnknownAndDuplicateDeployments checks that Deployments of no known
// application are ignored (logged once at debug), that an application's
// Deployment is found by its name label or by its name, and that a second
// Deployment of the same application is ignored.
func TestUnknownAndDuplicateDeployments(t *testing.T) {
	byLabel := deployment("frontend", "a") // named otherwise, labelled a
	byName := deployment("b", "b")
	delete(byName.Labels, LabelName)
	second := deployment("z-canary", "a") // sorts after frontend
	second.Spec.Selector.MatchLabels = map[string]string{"track": "canary"}
	client := fake.NewClientset(
		byLabel, pod("a", "a-1"),
		byName, pod("b", "b-1"),
		second,
		deployment("mystery", "mystery"), pod("mystery", "mystery-1"),
	)
	rec := newRecorder()
	tw, clk := startTwin(t, client, []sim.App{testApp("a", 10), testApp("b", 10), testApp("c", 10)}, WithLogger(slog.New(rec)))
	for range 3 {
		require.NoError(t, tw.Tick(t.Context()))
		clk.advance(time.Second)
	}
	st := tw.Status()
	require.Len(t, st, 2)
	assert.Equal(t, "b", st[0].App)
	assert.Equal(t, "b", st[0].Deployment)
	assert.Equal(t, "a", st[1].App)
	assert.Equal(t, "frontend", st[1].Deployment)
	fams := scrape(t, tw)
	assert.Equal(t, map[string]bool{"a-1": true, "b-1": true}, podNames(fams, "kube_pod_status_ready"))
	logs := rec.buf.String()
	assert.Equal(t, 1, bytes.Count([]byte(logs), []byte("no known application")), logs)
	assert.Contains(t, logs, "level=DEBUG")
	assert.Contains(t, logs, "deployment=apps/mystery")
	assert.Equal(t, 1, bytes.Count([]byte(logs), []byte("second Deployment")), logs)
}

// TestHeldWithoutRunningPods checks that an application whose pods are
// not Running yet is tracked but not advanced, and advances from where it
// was once a pod runs.
func TestHeldWithoutRunningPods(t *testing.T) {
	client := fake.NewClientset(deployment("a", "a"), pod("a", "a-1", pending))
	tw, clk := startTwin(t, client, []sim.App{testApp("a", 10)})
	ctx := t.Context()
	start := tw.apps[0].cl.Metrics(0)
	for range 2 {
		require.NoError(t, tw.Tick(ctx))
		clk.advance(time.Second)
	}
	st := tw.Status()
	require.Len(t, st, 1)
	assert.False(t, st[0].Advanced)
	assert.Equal(t, sim.Allocation{}, st[0].Allocation)
	assert.Equal(t, start, st[0].Metrics)
	fams := scrape(t, tw)
	assert.Equal(t, 0.0, value(t, fams, "kube_pod_status_ready", map[string]string{"pod": "a-1", "condition": "true"}))
	assert.Empty(t, series(fams, "container_cpu_usage_seconds_total", map[string]string{"pod": "a-1"}))

	running := pod("a", "a-1")
	_, err := client.CoreV1().Pods(testNS).UpdateStatus(ctx, running, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "a-1 Running in the cache", func() bool {
		p := cachedPod(tw, "a-1")
		return p != nil && p.Status.Phase == corev1.PodRunning
	})
	require.NoError(t, tw.Tick(ctx))
	st = tw.Status()
	assert.True(t, st[0].Advanced)
	assert.Equal(t, 1, st[0].Allocation.Replicas)
	fams = scrape(t, tw)
	assert.Equal(t, 1.0, value(t, fams, "kube_pod_status_ready", map[string]string{"pod": "a-1", "condition": "true"}))
	assert.Positive(t, value(t, fams, "container_cpu_usage_seconds_total", map[string]string{"pod": "a-1"}))
}

// TestResizeFollowsStatus checks that an in-place resize shows up in the
// allocation once the pod's status reports it, not before.
func TestResizeFollowsStatus(t *testing.T) {
	client := fake.NewClientset(deployment("a", "a"), pod("a", "a-1"))
	tw, clk := startTwin(t, client, []sim.App{testApp("a", 10)})
	ctx := t.Context()
	require.NoError(t, tw.Tick(ctx))
	assert.InDelta(t, 1.0, tw.Status()[0].Allocation.CPU, 1e-9)

	// The spec is resized; the status still reports the old limits.
	asked := pod("a", "a-1", withSpec("2", "1Gi"))
	_, err := client.CoreV1().Pods(testNS).Update(ctx, asked, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "the resized spec in the cache", func() bool {
		p := cachedPod(tw, "a-1")
		return p != nil && p.Spec.Containers[0].Resources.Limits.Cpu().String() == "2"
	})
	clk.advance(time.Second)
	require.NoError(t, tw.Tick(ctx))
	assert.InDelta(t, 1.0, tw.Status()[0].Allocation.CPU, 1e-9, "not applied yet")

	applied := pod("a", "a-1", withSpec("2", "1Gi"), withStatus("2", "1Gi"))
	_, err = client.CoreV1().Pods(testNS).UpdateStatus(ctx, applied, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "the resized status in the cache", func() bool {
		p := cachedPod(tw, "a-1")
		return p != nil && p.Status.ContainerStatuses[0].Resources.Limits.Cpu().String() == "2"
	})
	clk.advance(time.Second)
	require.NoError(t, tw.Tick(ctx))
	st := tw.Status()[0]
	assert.InDelta(t, 2.0, st.Allocation.CPU, 1e-9)
	assert.InDelta(t, 1<<30, st.Allocation.Memory, 1)
	assert.InDelta(t, 2.0, st.Metrics.CPULimit, 1e-9)
	fams := scrape(t, tw)
	assert.Equal(t, 2.0, value(t, fams, "kube_pod_container_resource_limits", map[string]string{"pod": "a-1", "resource": "cpu"}))
}

func TestOOMKillsGoToPodsInTurn(t *testing.T) {
	for _, tc := range []struct{ n, start, kills int }{{3, 0, 1}, {3, 2, 2}, {4, 7, 9}, {1, 5, 3}, {5, 3, 0}} {
		got := make([]int, tc.n)
		want := make([]int, tc.n)
		for j := range tc.kills {
			want[(tc.start+j)%tc.n]++
		}
		sum := 0
		for r := range tc.n {
			got[r] = oomShare(r, tc.n, tc.start, tc.kills)
			sum += got[r]
		}
		assert.Equal(t, want, got, "%+v", tc)
		assert.Equal(t, tc.kills, sum)
	}
}

func TestIOShares(t *testing.T) {
	prof := testProfile(t)
	for _, tc := range []struct {
		name           string
		chain          []segments.Spec
		disk, net      float64 // expected shares read / received
		diskTol, netTo float64
	}{
		{"reads files", []segments.Spec{{Name: "readFile", Size: 131072}}, 1, 0.5, 1e-3, 1e-9},
		{"writes files", []segments.Spec{{Name: "writeFile", Size: 262144}}, 0, 0.5, 1e-3, 1e-9},
		{"reads objects", []segments.Spec{{Name: "objectRead", Size: 131072}}, 0.5, 0.99, 1e-9, 0.01},
		{"writes objects, uncalibrated size", []segments.Spec{{Name: "objectWrite", Size: 200000}}, 0.5, 0.01, 1e-9, 0.01},
		{"CPU only", []segments.Spec{{Name: "matMul", Size: 50}}, 0.5, 0.5, 1e-9, 1e-9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, n := ioShares(prof, tc.chain)
			assert.InDelta(t, tc.disk, d, tc.diskTol)
			assert.InDelta(t, tc.net, n, tc.netTo)
		})
	}
}

// TestRunServesMetrics runs the twin serving on an address, reads its
// metrics over HTTP and stops it.
func TestRunServesMetrics(t *testing.T) {
	client := fake.NewClientset(deployment("a", "a"), pod("a", "a-1"))
	addr, err := localproc.FreeLoopbackAddr()
	require.NoError(t, err)
	tw, err := New(client, []sim.App{testApp("a", 10)}, testProfile(t), WithAddr(addr), WithTick(20*time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tw.Run(ctx) }()
	var fams map[string]*dto.MetricFamily
	eventually(t, "three ticks served", func() bool {
		fams, err = httpScrape("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		f, ok := fams["aware_twin_ticks_total"]
		return ok && f.Metric[0].Counter.GetValue() >= 3
	})
	assert.Equal(t, 1.0, value(t, fams, "aware_twin_apps_tracked", nil))
	assert.Equal(t, 1.0, value(t, fams, "aware_twin_apps_advanced", nil))
	assert.Equal(t, 1.0, value(t, fams, "aware_twin_pods_running", nil))
	assert.Equal(t, 1.0, value(t, fams, "aware_twin_apps_known", nil))
	assert.Equal(t, 10.0, value(t, fams, "aware_twin_sim_step_seconds", nil))
	assert.Positive(t, value(t, fams, "aware_twin_tick_duration_seconds", nil))
	assert.Positive(t, value(t, fams, "container_cpu_usage_seconds_total", map[string]string{"pod": "a-1"}))
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	_, err = http.Get("http://" + addr + "/metrics")
	assert.Error(t, err, "the server stops with Run")
}

func TestRunFailsOnBusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	tw, err := New(fake.NewClientset(), []sim.App{testApp("a", 10)}, testProfile(t), WithAddr(ln.Addr().String()))
	require.NoError(t, err)
	err = tw.Run(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metrics address")
}

// TestInject checks that an injected load step reaches the application's
// simulation from the next tick on, and that an unknown application is
// named in the error.
func TestInject(t *testing.T) {
	client := fake.NewClientset(deployment("a", "a"), pod("a", "a-1"), pod("a", "a-2"))
	tw, clk := startTwin(t, client, []sim.App{testApp("a", 20)})
	ctx := t.Context()
	require.NoError(t, tw.Tick(ctx))
	before := tw.Status()[0].Metrics.ArrivalRate
	require.NoError(t, tw.Inject("a", sim.LoadHigh))
	clk.advance(time.Second)
	require.NoError(t, tw.Tick(ctx))
	after := tw.Status()[0].Metrics.ArrivalRate
	assert.Greater(t, after, 2.5*before, "load ×4 (the shape moves by at most 1.5×): %g → %g", before, after)

	err := tw.Inject("b", sim.LoadHigh)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown application "b"`)
}

// TestShardsPartitionTheSeries: the shards of n together serve exactly
// the workload series of the full endpoint, each application's pods in
// one shard; a shard out of range is refused.
func TestShardsPartitionTheSeries(t *testing.T) {
	var objs []runtime.Object
	var apps []sim.App
	for i := range 12 {
		name := fmt.Sprintf("app-%02d", i)
		apps = append(apps, testApp(name, 10))
		objs = append(objs, deployment(name, name),
			pod(name, name+"-1", withSpec("500m", "256Mi"), withStatus("500m", "256Mi")),
			pod(name, name+"-2", withSpec("500m", "256Mi"), withStatus("500m", "256Mi")))
	}
	tw, _ := startTwin(t, fake.NewClientset(objs...), apps)
	require.NoError(t, tw.Tick(t.Context()))
	full := scrape(t, tw)

	const n = 4
	series := map[string]int{} // family → series over all shards
	shardOfPod := map[string]int{}
	nonEmpty := 0
	for i := range n {
		h, err := tw.ShardHandler(i, n)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		require.Equal(t, 200, rec.Code)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(rec.Body)
		require.NoError(t, err)
		if len(fams) > 0 {
			nonEmpty++
		}
		for name, f := range fams {
			require.False(t, strings.HasPrefix(name, "aware_twin_"), "shard %d serves the twin's own %s", i, name)
			series[name] += len(f.Metric)
			for p := range podNames(fams, name) {
				if s, ok := shardOfPod[p]; ok {
					require.Equal(t, s, i, "pod %s in shards %d and %d", p, s, i)
				}
				shardOfPod[p] = i
				assert.Equal(t, shardOf(testNS, p[:len(p)-2], n), i, "pod %s", p)
			}
		}
	}
	assert.Len(t, shardOfPod, 24, "every pod in some shard")
	assert.Greater(t, nonEmpty, 1, "12 applications spread over more than one of 4 shards")
	for name, f := range full {
		if !strings.HasPrefix(name, "aware_twin_") {
			assert.Equal(t, len(f.Metric), series[name], "%s: series of the shards against the full endpoint", name)
		}
	}

	for _, bad := range [][2]int{{-1, 4}, {4, 4}, {0, 0}} {
		_, err := tw.ShardHandler(bad[0], bad[1])
		assert.ErrorContains(t, err, fmt.Sprintf("shard %d of %d", bad[0], bad[1]))
	}
}
