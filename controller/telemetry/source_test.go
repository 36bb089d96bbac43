package telemetry

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullPod is a ready pod with every metric, fresh at `at`.
func fullPod(ns, pod string, at time.Time) podData {
	return podData{ns: ns, pod: pod, container: "app", cpu: 0.25, mem: 100 * mib, peak: 120 * mib, io: 1500, oom: 0,
		cpuLimit: 1, memLimit: 512 * mib, net: 3000, ready: 1, received: 60, processed: 58, failed: 2,
		buckets: []Bucket{{0.01, 0}, {0.025, 60}, {0.05, 60}, {0.1, 60}, {inf, 60}},
		seen:    [numExporters]time.Time{at.Add(-time.Second), at.Add(-2 * time.Second), at.Add(-500 * time.Millisecond)}}
}

func newTestSource(t *testing.T, url string, opts ...Option) *Source {
	t.Helper()
	s, err := New(url, opts...)
	require.NoError(t, err)
	return s
}

// A caller's deadline sooner than the query timeout is Prometheus'
// evaluation timeout too: it stops evaluating when nobody waits.
func TestSnapshotDeadlineBoundsEvaluation(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fp := newFakeProm(t, 30*time.Second, nil, []podData{fullPod("apps", "web-a", at)}, nil)
	src := newTestSource(t, fp.srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := src.Snapshot(ctx, 30*time.Second, at)
	require.NoError(t, err)
	require.Len(t, fp.calls, len(queryNames))
	for _, c := range fp.calls {
		d, err := time.ParseDuration(c["timeout"])
		require.NoError(t, err, c["timeout"])
		assert.LessOrEqual(t, d, 3*time.Second)
		assert.Positive(t, d)
	}
}

func TestSnapshotFromAPI(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := fullPod("apps", "web-a", at)
	b := fullPod("apps", "web-b", at)
	b.cpu, b.received, b.processed, b.failed = 0.5, 40, 40, 0
	b.buckets = []Bucket{{0.01, 0}, {0.025, 0}, {0.05, 0}, {0.1, 40}, {inf, 40}}
	starting := podData{ns: "apps", pod: "web-c", container: "app", cpuLimit: 1, memLimit: 512 * mib, ready: 0,
		absent: usageMetrics, seen: [numExporters]time.Time{1: at}}
	fp := newFakeProm(t, 30*time.Second, nil, []podData{a, b, starting}, nil)
	src := newTestSource(t, fp.srv.URL)

	snap, err := src.Snapshot(context.Background(), 30*time.Second, at)
	require.NoError(t, err)
	assert.Equal(t, len(queryNames), fp.callCount(), "a fixed number of queries")
	for _, c := range fp.calls {
		assert.Equal(t, "1772366400", c["time"], "every query at the snapshot's time")
		assert.Equal(t, "10s", c["timeout"])
	}
	assert.Equal(t, at, snap.At)
	assert.Equal(t, 30*time.Second, snap.Window)
	assert.Equal(t, DefaultMaxAge, snap.MaxAge)
	assert.Equal(t, AllMetrics, snap.Required)
	require.Len(t, snap.Queries, len(queryNames))
	for i, q := range snap.Queries {
		assert.Equal(t, queryNames[i], q.Name)
		assert.NotEmpty(t, q.Query)
	}
	assert.Equal(t, 2, snap.Queries[0].Series, "cpu: the starting pod has no usage yet")
	assert.Equal(t, []PodKey{{"apps", "web-a"}, {"apps", "web-b"}, {"apps", "web-c"}}, snap.PodKeys())

	pa := snap.Pods[PodKey{"apps", "web-a"}]
	assert.Equal(t, []ContainerSample{{Name: "app", CPUUsage: 0.25, MemoryWorkingSet: 100 * mib, MemoryPeak: 120 * mib,
		IORate: 1500, CPULimit: 1, MemoryLimit: 512 * mib, Has: containerMetrics}}, pa.Containers)
	assert.Equal(t, AllMetrics&^containerMetrics, pa.Has)
	assert.True(t, pa.Ready)
	assert.Equal(t, 3000.0, pa.NetRate)
	assert.Equal(t, [3]float64{60, 58, 2}, [3]float64{pa.Received, pa.Processed, pa.Failed})
	assert.Equal(t, a.buckets, pa.Latency)
	assert.Equal(t, [numExporters]time.Time{at.Add(-time.Second), at.Add(-2 * time.Second), at.Add(-500 * time.Millisecond)}, pa.Seen)
	assert.Equal(t, at.Add(-500*time.Millisecond), pa.Newest())

	o, err := snap.Aggregate(snap.PodKeys(), "app")
	require.NoError(t, err)
	assert.Equal(t, 3, o.Pods)
	assert.Equal(t, 2, o.ReadyReplicas)
	assert.Equal(t, []PodKey{{"apps", "web-c"}}, o.Partial)
	assert.InDelta(t, 0.75, o.CPUUsage, 1e-12)
	assert.InDelta(t, 100, o.ArrivalRate, 1e-12)
	assert.InDelta(t, 0.09875, o.LatencyP99, 1e-12)
	assert.Equal(t, at.Add(-2*time.Second), o.Oldest)

	stats := src.Stats()
	require.Len(t, stats, len(queryNames))
	for _, st := range stats {
		assert.Equal(t, int64(1), st.Count, st.Name)
		assert.Zero(t, st.Errors)
		assert.Positive(t, st.Total)
		assert.Equal(t, st.Total, st.Mean())
		assert.Equal(t, at, st.LastEvaluation)
	}
	assert.Equal(t, "cpu", stats[0].Name)
	assert.Equal(t, "latency", stats[11].Name)
	assert.Equal(t, 2*5, stats[11].LastSeries, "latency: 5 buckets of 2 pods")
}

func TestSnapshotNaNAndStale(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	nanMem := fullPod("apps", "web-a", at)
	nanMem.mem = math.NaN()
	nanBucket := fullPod("apps", "web-b", at)
	nanBucket.buckets = []Bucket{{0.1, math.NaN()}, {inf, 3}}
	noInf := fullPod("apps", "web-c", at)
	noInf.buckets = []Bucket{{0.1, 1}, {1, 3}}
	stale := fullPod("apps", "web-d", at)
	stale.seen[ExporterKubeState] = at.Add(-5 * time.Minute)
	ended := fullPod("apps", "web-e", at)
	ended.seen[ExporterCAdvisor] = time.Time{}
	negMem := fullPod("apps", "web-f", at)
	negMem.mem = -4096
	infMem := fullPod("apps", "web-g", at)
	infMem.mem = math.Inf(1)
	negBucket := fullPod("apps", "web-h", at)
	negBucket.buckets = []Bucket{{0.1, -1}, {inf, 3}}
	fp := newFakeProm(t, time.Minute, nil, []podData{nanMem, nanBucket, noInf, stale, ended, negMem, infMem, negBucket}, nil)
	snap, err := newTestSource(t, fp.srv.URL).Snapshot(context.Background(), time.Minute, at)
	require.NoError(t, err)

	for _, tc := range []struct {
		pod     string
		wantIs  error
		wantErr string
	}{
		{"web-a", ErrNoData, "no data for memory working set (container_memory_working_set_bytes) of container \"app\" (1 pods: apps/web-a): NaN, infinite or negative value"},
		{"web-b", ErrNoData, "latency histogram (aware_workload_request_duration_seconds_bucket) (1 pods: apps/web-b): NaN, infinite or negative bucket count, or no +Inf bucket"},
		{"web-c", ErrNoData, "latency histogram (aware_workload_request_duration_seconds_bucket) (1 pods: apps/web-c): NaN, infinite or negative bucket count, or no +Inf bucket"},
		{"web-d", ErrStale, "stale data from kube-state-metrics (1 pods: apps/web-d): newest sample up to 5m0s old, max age 1m0s"},
		{"web-e", ErrStale, "stale data from cadvisor (1 pods: apps/web-e): data in the window but no current sample"},
		{"web-f", ErrNoData, "no data for memory working set (container_memory_working_set_bytes) of container \"app\" (1 pods: apps/web-f): NaN, infinite or negative value"},
		{"web-g", ErrNoData, "(1 pods: apps/web-g): NaN, infinite or negative value"},
		{"web-h", ErrNoData, "(1 pods: apps/web-h): NaN, infinite or negative bucket count, or no +Inf bucket"},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			_, err := snap.Aggregate([]PodKey{{"apps", tc.pod}}, "app")
			require.ErrorIs(t, err, tc.wantIs)
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
	assert.False(t, math.IsNaN(snap.Pods[PodKey{"apps", "web-a"}].Containers[0].MemoryWorkingSet), "a NaN is not stored as a value")
}

func TestSnapshotQueryErrors(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pods := []podData{fullPod("apps", "web-a", at)}
	fp := newFakeProm(t, time.Minute, nil, pods, map[string]string{"latency": "query timed out in expression evaluation"})
	src := newTestSource(t, fp.srv.URL)
	_, err := src.Snapshot(context.Background(), time.Minute, at)
	var qe *QueryError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, "latency", qe.Name)
	assert.Contains(t, qe.Query, "aware_workload_request_duration_seconds_bucket")
	assert.ErrorContains(t, err, "telemetry: query latency (sum by (namespace, pod, le) (rate(")
	assert.ErrorContains(t, err, "query timed out in expression evaluation")
	var latency QueryStats
	for _, st := range src.Stats() {
		if st.Name == "latency" {
			latency = st
		}
	}
	assert.Equal(t, int64(1), latency.Errors)

	// A server that is not there.
	dead := newTestSource(t, "http://127.0.0.1:1")
	_, err = dead.Snapshot(context.Background(), time.Minute, at)
	require.ErrorAs(t, err, &qe)
	assert.ErrorContains(t, err, "connection refused")

	// Bad windows.
	for _, w := range []time.Duration{0, -time.Second, 1500 * time.Microsecond} {
		_, err = src.Snapshot(context.Background(), w, at)
		assert.ErrorContains(t, err, "must be a positive whole number of milliseconds", w)
	}

	// A cancelled context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = src.Snapshot(ctx, time.Minute, at)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestSnapshotNotAVector(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fp := newFakeProm(t, time.Minute, nil, nil, nil)
	fp.bodies["ready"] = []byte(`{"status":"success","data":{"resultType":"scalar","result":[1772366400,"1"]}}`)
	_, err := newTestSource(t, fp.srv.URL).Snapshot(context.Background(), time.Minute, at)
	assert.ErrorContains(t, err, "telemetry: query ready")
	assert.ErrorContains(t, err, "result is a scalar, want a vector")
}

func TestSnapshotBadBucketLabel(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fp := newFakeProm(t, time.Minute, nil, nil, nil)
	fp.bodies["latency"] = []byte(`{"status":"success","data":{"resultType":"vector","result":[` +
		`{"metric":{"namespace":"a","pod":"b","le":"ten"},"value":[1772366400,"1"]}]}}`)
	_, err := newTestSource(t, fp.srv.URL).Snapshot(context.Background(), time.Minute, at)
	assert.ErrorContains(t, err, `telemetry: query latency`)
	assert.ErrorContains(t, err, `pod a/b: bucket le="ten"`)
}

func TestObserve(t *testing.T) {
	at := time.Now()
	regex := DeploymentPodRegex("web")
	matchers := []Matcher{{"cluster", "=", "eu-1"}, {"namespace", "=", "apps"}, {"pod", "=~", regex}}
	a := fullPod("apps", "web-7c9f8b6d5-x2v4k", at)
	// A pod whose series remain in the window after it was deleted: no
	// readiness series, so Observe leaves it out.
	gone := fullPod("apps", "web-7c9f8b6d5-q9z8p", at)
	gone.absent = MetricReady
	gone.seen = [numExporters]time.Time{}
	fp := newFakeProm(t, 30*time.Second, matchers, []podData{a, gone}, nil)
	src := newTestSource(t, fp.srv.URL, WithMatchers(Matcher{"cluster", "=", "eu-1"}), WithMaxAge(time.Hour))

	o, err := src.Observe(context.Background(), "apps", regex, "app", 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, o.Pods)
	assert.InDelta(t, 0.25, o.CPUUsage, 1e-12)
	for _, c := range fp.calls {
		assert.Contains(t, c["query"], `namespace="apps",pod=~"`+strings.ReplaceAll(regex, `\`, `\\`)+`"`)
		assert.Contains(t, c["query"], `cluster="eu-1"`)
	}

	_, err = src.Observe(context.Background(), "", regex, "app", 30*time.Second)
	assert.ErrorContains(t, err, "empty namespace")
	_, err = src.Observe(context.Background(), "apps", "web-(", "app", 30*time.Second)
	assert.ErrorContains(t, err, `pod regex "web-("`)

	empty := newFakeProm(t, 30*time.Second, []Matcher{{"namespace", "=", "apps"}, {"pod", "=~", "nothing"}}, nil, nil)
	_, err = newTestSource(t, empty.srv.URL).Observe(context.Background(), "apps", "nothing", "app", 30*time.Second)
	require.ErrorIs(t, err, ErrNoData)
	assert.EqualError(t, err, `telemetry: no data for readiness (kube_pod_status_ready{condition="true"}): no pod in namespace "apps" matches "nothing"`)
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		url     string
		opts    []Option
		wantErr string
	}{
		{"bad matcher name", "http://x", []Option{WithMatchers(Matcher{"9lives", "=", "x"})}, `label name "9lives"`},
		{"bad matcher op", "http://x", []Option{WithMatchers(Matcher{"a", "==", "x"})}, `operator "==" is not one of`},
		{"bad matcher regex", "http://x", []Option{WithMatchers(Matcher{"a", "=~", "("})}, "missing closing )"},
		{"max age", "http://x", []Option{WithMaxAge(0)}, "WithMaxAge: 0s must be positive"},
		{"required", "http://x", []Option{WithRequired(1 << 30)}, "WithRequired: unknown metric bits 0x40000000"},
		{"parallelism", "http://x", []Option{WithParallelism(0)}, "WithParallelism: 0 must be at least 1"},
		{"timeout", "http://x", []Option{WithQueryTimeout(-time.Second)}, "WithQueryTimeout: -1s must be positive"},
		{"logger", "http://x", []Option{WithLogger(nil)}, "WithLogger: nil logger"},
		{"url", "://nope", nil, `prometheus URL "://nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.url, tc.opts...)
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestQueriesText(t *testing.T) {
	src := newTestSource(t, "http://x", WithMatchers(Matcher{"cluster", "=", "a"}))
	q := src.Queries(30 * time.Second)
	assert.Len(t, q, len(queryNames))
	assert.Equal(t, `sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{pod!="",cluster="a",container!="",container!="POD"}[30s]))`, q["cpu"])
	assert.Equal(t, `sum by (namespace, pod, container, resource) (kube_pod_container_resource_limits{pod!="",cluster="a",resource=~"cpu|memory"})`, q["limits"])
	assert.Equal(t, `max by (namespace, pod) (kube_pod_status_ready{pod!="",cluster="a",condition="true"})`, q["ready"])
	assert.Equal(t, `sum by (namespace, pod, le) (rate(aware_workload_request_duration_seconds_bucket{pod!="",cluster="a"}[30s]))`, q["latency"])
}

func TestFake(t *testing.T) {
	first := NewSnapshot(t0, 0)
	second := NewSnapshot(t0.Add(time.Minute), time.Minute)
	f := NewFake(first, second)
	var s Snapshotter = f
	got, err := s.Snapshot(context.Background(), 30*time.Second, t0)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, got.Window, "zero window filled from the call")
	assert.Equal(t, t0, got.At)
	got, err = s.Snapshot(context.Background(), 30*time.Second, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Minute), got.At, "scripted time kept")
	got, err = s.Snapshot(context.Background(), 30*time.Second, t0)
	require.NoError(t, err)
	assert.Equal(t, second.At, got.At, "last repeated")
	assert.Equal(t, 3, f.CallCount())
	f.Err = errors.New("prometheus down")
	_, err = s.Snapshot(context.Background(), time.Minute, t0)
	assert.EqualError(t, err, "prometheus down")
	_, err = NewFake().Snapshot(context.Background(), time.Minute, t0)
	assert.ErrorContains(t, err, "no snapshot scripted")
}
