package telemetry_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/telemetry"
	"github.com/aware-autoscaler/aware/infra/localproc"
	promlocal "github.com/aware-autoscaler/aware/infra/prometheus"
	"github.com/aware-autoscaler/aware/workloads/server"
)

const (
	mib = 1 << 20
	ns  = "itest"
)

// fakePod is what the test exporter reports for one pod: counters grow
// linearly from the exporter's start, so their rates are exact.
type fakePod struct {
	name                        string
	cpu, mem                    float64 // cores, bytes
	reads, writes, rx, tx       float64 // bytes/s
	received, processed, failed float64 // requests/s
	latencyBucket               int     // index in server.DurationBuckets all requests fall into
	cpuLimit, memLimit          float64
	ready                       bool
	onlyKubeState               bool // a pod that is not running yet
	oomAt                       *atomic.Int64
}

// exporter exposes cAdvisor, kube-state-metrics and workload series for the
// pods under the contract's names.
type exporter struct {
	pods  []*fakePod
	start time.Time
}

func (e *exporter) elapsed() float64 { return time.Since(e.start).Seconds() }

// Describe describes nothing: the exporter is an unchecked collector.
func (e *exporter) Describe(chan<- *prometheus.Desc) {}

func (e *exporter) Collect(ch chan<- prometheus.Metric) {
	el := e.elapsed()
	emit := func(name string, typ prometheus.ValueType, v float64, labels ...string) {
		var keys, vals []string
		for i := 0; i < len(labels); i += 2 {
			keys, vals = append(keys, labels[i]), append(vals, labels[i+1])
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, "test", keys, nil), typ, v, vals...)
	}
	for _, p := range e.pods {
		ready := 0.0
		if p.ready {
			ready = 1
		}
		emit("kube_pod_status_ready", prometheus.GaugeValue, ready, "namespace", ns, "pod", p.name, "condition", "true")
		emit("kube_pod_status_ready", prometheus.GaugeValue, 1-ready, "namespace", ns, "pod", p.name, "condition", "false")
		emit("kube_pod_container_resource_limits", prometheus.GaugeValue, p.cpuLimit,
			"namespace", ns, "pod", p.name, "container", "app", "resource", "cpu", "unit", "core")
		emit("kube_pod_container_resource_limits", prometheus.GaugeValue, p.memLimit,
			"namespace", ns, "pod", p.name, "container", "app", "resource", "memory", "unit", "byte")
		if p.onlyKubeState {
			continue
		}
		c := []string{"namespace", ns, "pod", p.name, "container", "app"}
		emit("container_cpu_usage_seconds_total", prometheus.CounterValue, p.cpu*el, c...)
		// The pause container and the pod cgroup, which must not count.
		emit("container_cpu_usage_seconds_total", prometheus.CounterValue, 100*el, "namespace", ns, "pod", p.name, "container", "POD")
		emit("container_cpu_usage_seconds_total", prometheus.CounterValue, 100*el, "namespace", ns, "pod", p.name, "container", "")
		emit("container_memory_working_set_bytes", prometheus.GaugeValue, p.mem, c...)
		emit("container_fs_reads_bytes_total", prometheus.CounterValue, p.reads*el, append(c, "device", "/dev/vda")...)
		emit("container_fs_writes_bytes_total", prometheus.CounterValue, p.writes*el, append(c, "device", "/dev/vda")...)
		oom := 0.0
		if at := p.oomAt; at != nil && at.Load() != 0 && time.Now().UnixMilli() >= at.Load() {
			oom = 1
		}
		emit("container_oom_events_total", prometheus.CounterValue, oom, c...)
		net := []string{"namespace", ns, "pod", p.name, "interface", "eth0"}
		emit("container_network_receive_bytes_total", prometheus.CounterValue, p.rx*el, net...)
		emit("container_network_transmit_bytes_total", prometheus.CounterValue, p.tx*el, net...)
		pl := []string{"namespace", ns, "pod", p.name}
		emit("aware_workload_requests_received_total", prometheus.CounterValue, p.received*el, pl...)
		emit("aware_workload_requests_processed_total", prometheus.CounterValue, p.processed*el, pl...)
		emit("aware_workload_requests_failed_total", prometheus.CounterValue, p.failed*el, append(pl, "reason", "error")...)
		ran := (p.processed + p.failed) * el
		buckets := map[float64]uint64{}
		for i, ub := range server.DurationBuckets {
			if i >= p.latencyBucket {
				buckets[ub] = uint64(ran)
			} else {
				buckets[ub] = 0
			}
		}
		ch <- prometheus.MustNewConstHistogram(prometheus.NewDesc("aware_workload_request_duration_seconds", "test",
			[]string{"namespace", "pod"}, nil), uint64(ran), ran*server.DurationBuckets[p.latencyBucket], buckets, ns, p.name)
	}
}

// TestSnapshotFromRealPrometheus scrapes a test exporter with known rates
// with the real Prometheus every second and checks what Snapshot and
// Aggregate make of it.
func TestSnapshotFromRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts Prometheus")
	}
	const window = 5 * time.Second
	oomAt := &atomic.Int64{}
	ex := &exporter{start: time.Now(), pods: []*fakePod{
		// 60 req/s, all in (10, 25] ms; one OOM kill.
		{name: "web-7c9f8b6d5-x2v4k", cpu: 0.25, mem: 100 * mib, reads: 1000, writes: 500, rx: 2000, tx: 1000,
			received: 62, processed: 58, failed: 2, latencyBucket: 4, cpuLimit: 1, memLimit: 512 * mib, ready: true, oomAt: oomAt},
		// 40 req/s, all in (50, 100] ms.
		{name: "web-7c9f8b6d5-q9z8p", cpu: 0.5, mem: 200 * mib, reads: 3000, writes: 0, rx: 500, tx: 500,
			received: 40, processed: 40, failed: 0, latencyBucket: 6, cpuLimit: 1, memLimit: 512 * mib, ready: true},
		// Scheduled, not running yet.
		{name: "web-7c9f8b6d5-n5m6r", cpuLimit: 1, memLimit: 512 * mib, onlyKubeState: true},
		// Another Deployment in the namespace.
		{name: "webhook-5b7d9-kx2z4", cpu: 3, mem: 1 << 30, cpuLimit: 4, memLimit: 2 << 30, ready: true, latencyBucket: 0},
	}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(ex)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prom, err := promlocal.Start(ctx, t.TempDir(), promlocal.WithStaticTarget("twin", strings.TrimPrefix(srv.URL, "http://"), "/metrics"))
	if errors.Is(err, promlocal.ErrNoBinary) && os.Getenv("CI") != "true" {
		t.Skipf("prometheus not installed; run ci/setup.sh (or apt-get install prometheus): %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, prom.Stop())
		if t.Failed() {
			t.Logf("prometheus log:\n%s", localproc.FileTail(prom.LogPath(), 8192, 0))
		}
	})
	require.NoError(t, prom.WaitForTarget(ctx, "twin"))
	up := time.Now()
	// The OOM kill happens 2.5s before the snapshot, inside its window.
	at := up.Add(window + 2*time.Second)
	oomAt.Store(at.Add(-2500 * time.Millisecond).UnixMilli())
	time.Sleep(time.Until(at.Add(300 * time.Millisecond))) // let the scrape at `at` land

	src, err := telemetry.New(prom.URL(), telemetry.WithMaxAge(5*time.Second))
	require.NoError(t, err)
	snap, err := src.Snapshot(ctx, window, at)
	require.NoError(t, err)
	assert.Len(t, snap.Queries, 13)

	pods := []telemetry.PodKey{{Namespace: ns, Pod: "web-7c9f8b6d5-x2v4k"}, {Namespace: ns, Pod: "web-7c9f8b6d5-q9z8p"},
		{Namespace: ns, Pod: "web-7c9f8b6d5-n5m6r"}}
	o, err := snap.Aggregate(pods, "app")
	require.NoError(t, err)
	const tol = 0.02 // relative: scrape timestamps jitter by milliseconds
	assert.Equal(t, 3, o.Pods)
	assert.Equal(t, 2, o.ReadyReplicas)
	assert.Equal(t, []telemetry.PodKey{pods[2]}, o.Partial)
	assert.InEpsilon(t, 0.75, o.CPUUsage, tol, "the pod cgroup and pause container are left out")
	assert.InEpsilon(t, 300*mib, o.MemoryUsage, 1e-9)
	assert.InEpsilon(t, 200*mib, o.MemoryPeak, 1e-9)
	assert.InEpsilon(t, 1, o.CPULimit, 1e-9)
	assert.InEpsilon(t, 512*mib, o.MemoryLimit, 1e-9)
	assert.InEpsilon(t, 4500, o.IORate, tol)
	assert.InEpsilon(t, 4000, o.NetRate, tol)
	assert.InEpsilon(t, 102, o.ArrivalRate, tol)
	assert.InEpsilon(t, 98, o.ProcessedRate, tol)
	assert.InEpsilon(t, 2, o.DroppedRate, tol)
	// 60 req/s in (10, 25] ms and 40 req/s in (50, 100] ms.
	assert.InEpsilon(t, 0.01+0.015*50/60, o.LatencyP50, tol)
	assert.InEpsilon(t, 0.05+0.05*35/40, o.LatencyP95, tol)
	assert.InEpsilon(t, 0.05+0.05*39/40, o.LatencyP99, tol)
	assert.Equal(t, 1, o.OOMKills, "OOM events: %g", o.OOMEvents)
	assert.WithinDuration(t, at, o.Newest, 1500*time.Millisecond)
	m := o.Metrics(3)
	assert.Equal(t, 3, m.Replicas)
	assert.Equal(t, o.LatencyP99, m.LatencyP99)

	// Our quantile agrees with Prometheus' histogram_quantile over the same data.
	for _, q := range []float64{0.5, 0.95, 0.99} {
		v, _, err := prom.API().Query(ctx, `histogram_quantile(`+model.SampleValue(q).String()+
			`, sum by (le) (rate(aware_workload_request_duration_seconds_bucket{namespace="itest",pod=~"web-7c9f8b6d5-.*"}[5s])))`, at)
		require.NoError(t, err)
		vec := v.(model.Vector)
		require.Len(t, vec, 1)
		want := float64(vec[0].Value)
		got := telemetry.Quantile(q, append([]telemetry.Bucket(nil), o.Latency...))
		assert.InDelta(t, want, got, 1e-9*want, "q=%g", q)
	}

	// Single-application use: only the web Deployment's pods, now.
	obs, err := src.Observe(ctx, ns, telemetry.DeploymentPodRegex("web"), "app", window)
	require.NoError(t, err)
	assert.Equal(t, 3, obs.Pods)
	assert.InEpsilon(t, 0.75, obs.CPUUsage, tol)

	// Two minutes on, nothing is fresh: explicit errors, never zeros.
	_, err = snap.Aggregate([]telemetry.PodKey{{Namespace: ns, Pod: "no-such-pod"}}, "app")
	require.ErrorIs(t, err, telemetry.ErrNoData)
	late, err := src.Snapshot(ctx, window, time.Now().Add(2*time.Minute))
	require.NoError(t, err)
	_, err = late.Aggregate(pods[:2], "app")
	require.ErrorIs(t, err, telemetry.ErrStale)
	require.ErrorIs(t, err, telemetry.ErrNoData, "no samples in the window for the rates")

	for _, st := range src.Stats() {
		assert.Equal(t, int64(3), st.Count, st.Name)
		assert.Zero(t, st.Errors, st.Name)
		t.Logf("query %-11s mean %v max %v series %d", st.Name, st.Mean(), st.Max, st.LastSeries)
	}
}
