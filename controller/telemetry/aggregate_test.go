package telemetry

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
)

const mib = 1 << 20

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// webPod is a ready pod of the web app with every metric.
func webPod(name string, cpu, mem, received float64, hist []Bucket) PodSample {
	return PodSample{
		Key: PodKey{"apps", name},
		Containers: []ContainerSample{{Name: "app", CPUUsage: cpu, MemoryWorkingSet: mem, MemoryPeak: mem * 1.5,
			IORate: 1000, OOMEvents: 0, CPULimit: 1, MemoryLimit: 512 * mib, Has: containerMetrics}},
		NetRate: 3000, Ready: true, Received: received, Processed: received * 0.9, Failed: received * 0.1,
		Latency: hist, Has: AllMetrics &^ containerMetrics,
	}
}

func TestAggregate(t *testing.T) {
	bounds := []float64{0.01, 0.025, 0.05, 0.1, inf}
	a := webPod("web-a", 0.25, 100*mib, 60, cumulative(bounds, []float64{0, 60, 0, 0, 0}))
	a.Containers[0].OOMEvents = 1.25 // one kill, extrapolated by increase()
	b := webPod("web-b", 0.5, 200*mib, 40, cumulative(bounds, []float64{0, 0, 0, 40, 0}))
	b.Containers[0].CPULimit, b.Containers[0].MemoryLimit = 2, 1024*mib // mid-rollout
	snap := NewSnapshot(t0, 30*time.Second, a, b)

	o, err := snap.Aggregate([]PodKey{{"apps", "web-a"}, {"apps", "web-b"}}, "app")
	require.NoError(t, err)
	assert.Equal(t, 2, o.Pods)
	assert.Equal(t, 2, o.ReadyReplicas)
	assert.Empty(t, o.Partial)
	assert.InDelta(t, 1.5, o.CPULimit, 1e-12, "mean of the pods' limits")
	assert.InDelta(t, 768*mib, o.MemoryLimit, 1e-6)
	assert.InDelta(t, 0.75, o.CPUUsage, 1e-12)
	assert.InDelta(t, 300*mib, o.MemoryUsage, 1e-6)
	assert.InDelta(t, 300*mib, o.MemoryPeak, 1e-6, "largest per-pod peak")
	assert.InDelta(t, 2000, o.IORate, 1e-9)
	assert.InDelta(t, 6000, o.NetRate, 1e-9)
	assert.InDelta(t, 100, o.ArrivalRate, 1e-9)
	assert.InDelta(t, 90, o.ProcessedRate, 1e-9)
	assert.InDelta(t, 10, o.DroppedRate, 1e-9)
	assert.InDelta(t, 0.0225, o.LatencyP50, 1e-12)
	assert.InDelta(t, 0.09375, o.LatencyP95, 1e-12)
	assert.InDelta(t, 0.09875, o.LatencyP99, 1e-12)
	assert.Equal(t, cumulative(bounds, []float64{0, 60, 0, 40, 0}), o.Latency)
	assert.InDelta(t, 1.25, o.OOMEvents, 1e-12)
	assert.Equal(t, 1, o.OOMKills)
	assert.Equal(t, t0, o.Newest)
	assert.Equal(t, t0, o.Oldest)
	assert.Zero(t, o.Missing)
	assert.Equal(t, a.Latency, snap.Pods[PodKey{"apps", "web-a"}].Latency, "the pods' histograms are not modified")

	m := o.Metrics(3)
	assert.Equal(t, gym.Metrics{Replicas: 3, ReadyReplicas: 2, CPULimit: 1.5, MemoryLimit: 768 * mib, CPUUsage: 0.75,
		MemoryUsage: 300 * mib, MemoryPeak: 300 * mib, IORate: 2000, NetRate: 6000, ArrivalRate: 100, ProcessedRate: 90,
		DroppedRate: 10, LatencyP50: o.LatencyP50, LatencyP95: o.LatencyP95, LatencyP99: o.LatencyP99, OOMKills: 1}, m)
}

func TestAggregateContainers(t *testing.T) {
	p := webPod("web-a", 0.25, 100*mib, 10, []Bucket{{0.1, 10}, {inf, 10}})
	p.Containers = append(p.Containers, ContainerSample{Name: "sidecar", CPUUsage: 0.05, MemoryWorkingSet: 20 * mib,
		MemoryPeak: 30 * mib, IORate: 10, CPULimit: 0.1, MemoryLimit: 64 * mib, Has: containerMetrics})
	snap := NewSnapshot(t0, time.Minute, p)
	keys := []PodKey{p.Key}

	app, err := snap.Aggregate(keys, "app")
	require.NoError(t, err)
	assert.InDelta(t, 0.25, app.CPUUsage, 1e-12)
	assert.InDelta(t, 1, app.CPULimit, 1e-12)

	all, err := snap.Aggregate(keys, "")
	require.NoError(t, err)
	assert.InDelta(t, 0.30, all.CPUUsage, 1e-12)
	assert.InDelta(t, 1.1, all.CPULimit, 1e-12)
	assert.InDelta(t, 120*mib, all.MemoryUsage, 1e-6)
	assert.InDelta(t, 180*mib, all.MemoryPeak, 1e-6)

	_, err = snap.Aggregate(keys, "nginx")
	require.ErrorIs(t, err, ErrNoData)
	assert.ErrorContains(t, err, `cpu usage (container_cpu_usage_seconds_total) of container "nginx" (1 pods: apps/web-a): no series`)
}

func TestAggregateNoTraffic(t *testing.T) {
	p := webPod("web-a", 0.01, 50*mib, 0, []Bucket{{0.1, 0}, {1, 0}, {inf, 0}})
	o, err := NewSnapshot(t0, time.Minute, p).Aggregate([]PodKey{p.Key}, "app")
	require.NoError(t, err)
	assert.True(t, math.IsNaN(o.LatencyP99), "no request: no latency, not zero latency")
	m := o.Metrics(1)
	assert.Zero(t, m.LatencyP99, "the simulator's convention for an idle step")
	assert.Equal(t, 1.0, gym.SLOPreservation(gym.SLO{Kind: gym.LatencySLO, Target: 0.1}, m))
}

func TestAggregateStartingPod(t *testing.T) {
	ready := webPod("web-a", 0.25, 100*mib, 10, []Bucket{{0.1, 10}, {inf, 10}})
	starting := PodSample{Key: PodKey{"apps", "web-new"},
		Containers: []ContainerSample{{Name: "app", CPULimit: 1, MemoryLimit: 512 * mib, Has: MetricCPULimit | MetricMemoryLimit}},
		Ready:      false, Has: MetricReady}
	snap := NewSnapshot(t0, time.Minute, ready, starting)

	o, err := snap.Aggregate([]PodKey{ready.Key, starting.Key}, "app")
	require.NoError(t, err)
	assert.Equal(t, 1, o.ReadyReplicas)
	assert.Equal(t, []PodKey{starting.Key}, o.Partial)
	assert.InDelta(t, 0.25, o.CPUUsage, 1e-12)
	assert.InDelta(t, 1, o.CPULimit, 1e-12)

	// Without limits even a starting pod is incomplete.
	starting.Containers[0].Has = 0
	_, err = NewSnapshot(t0, time.Minute, ready, starting).Aggregate([]PodKey{ready.Key, starting.Key}, "app")
	require.ErrorIs(t, err, ErrNoData)
	assert.ErrorContains(t, err, "cpu limit")
	assert.ErrorContains(t, err, "memory limit")
}

func TestAggregateStartingLeavesOutPodsWithoutData(t *testing.T) {
	hist := []Bucket{{0.1, 10}, {inf, 10}}
	a := webPod("web-a", 0.25, 100*mib, 10, hist)
	b := webPod("web-b", 0.5, 100*mib, 20, hist)
	b.Containers[0].Has &^= MetricCPUUsage // scraped once, no rate yet
	gone := PodKey{"apps", "web-new"}      // not scraped at all
	snap := NewSnapshot(t0, time.Minute, a, b)
	all := []PodKey{a.Key, b.Key, gone}

	o, err := snap.AggregateStarting(all, []PodKey{b.Key, gone}, "app")
	require.NoError(t, err)
	assert.Equal(t, 1, o.Pods)
	assert.Equal(t, []PodKey{b.Key, gone}, o.Left)
	assert.InDelta(t, 0.25, o.CPUUsage, 1e-12, "the settled pod's usage only")
	assert.InDelta(t, 10, o.ArrivalRate, 1e-12)
	assert.Equal(t, 1, o.ReadyReplicas)

	// A settled pod without data still fails, naming only it.
	_, err = snap.AggregateStarting(all, []PodKey{gone}, "app")
	var de *DataError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, &DataError{Err: ErrNoData, Metric: MetricCPUUsage, Container: "app", Pods: []PodKey{b.Key}, Detail: "no series"}, de)

	// Stale data fails for a starting pod too.
	b.Seen[ExporterKubeState] = t0.Add(-time.Hour)
	_, err = NewSnapshot(t0, time.Minute, a, b).AggregateStarting(all, []PodKey{b.Key, gone}, "app")
	require.ErrorIs(t, err, ErrStale)

	// Only starting pods, none with data: nothing to aggregate.
	_, err = snap.AggregateStarting([]PodKey{gone}, []PodKey{gone}, "app")
	require.ErrorIs(t, err, ErrNoData)
	assert.ErrorContains(t, err, "only starting pods")
}

func TestAggregateErrors(t *testing.T) {
	hist := []Bucket{{0.1, 10}, {inf, 10}}
	key := PodKey{"apps", "web-a"}
	for _, tc := range []struct {
		name     string
		edit     func(p *PodSample, s *Snapshot)
		pods     []PodKey
		wantIs   error
		wantErr  []string
		wantData *DataError
	}{
		{name: "unknown pod", pods: []PodKey{key, {"apps", "web-gone"}}, wantIs: ErrNoData,
			wantData: &DataError{Err: ErrNoData, Container: "app", Pods: []PodKey{{"apps", "web-gone"}}, Detail: "no series at all for these pods"}},
		{name: "missing cpu", edit: func(p *PodSample, _ *Snapshot) { p.Containers[0].Has &^= MetricCPUUsage }, wantIs: ErrNoData,
			wantData: &DataError{Err: ErrNoData, Metric: MetricCPUUsage, Container: "app", Pods: []PodKey{key}, Detail: "no series"}},
		{name: "missing readiness", edit: func(p *PodSample, _ *Snapshot) { p.Has &^= MetricReady }, wantIs: ErrNoData,
			wantErr: []string{`readiness (kube_pod_status_ready{condition="true"}) (1 pods: apps/web-a): no series`}},
		{name: "NaN memory", edit: func(p *PodSample, _ *Snapshot) {
			p.Containers[0].Has &^= MetricMemoryWorkingSet
			p.Containers[0].Invalid |= MetricMemoryWorkingSet
		}, wantIs: ErrNoData, wantErr: []string{"memory working set", "NaN, infinite or negative value"}},
		{name: "NaN latency bucket", edit: func(p *PodSample, _ *Snapshot) { p.Has &^= MetricLatency; p.Invalid |= MetricLatency },
			wantIs: ErrNoData, wantErr: []string{"latency histogram", "NaN, infinite or negative bucket count, or no +Inf bucket"}},
		{name: "stale cadvisor", edit: func(p *PodSample, _ *Snapshot) { p.Seen[ExporterCAdvisor] = t0.Add(-90 * time.Second) },
			wantIs: ErrStale, wantData: &DataError{Err: ErrStale, Exporter: ExporterCAdvisor, Container: "app", Pods: []PodKey{key},
				Detail: "newest sample up to 1m30s old, max age 1m0s"}},
		{name: "series ended", edit: func(p *PodSample, _ *Snapshot) { p.Seen[ExporterWorkload] = time.Time{} },
			wantIs: ErrStale, wantErr: []string{"stale data from workload", "no current sample"}},
		{name: "stale within max age is fine", edit: func(p *PodSample, _ *Snapshot) { p.Seen[ExporterKubeState] = t0.Add(-59 * time.Second) }},
		{name: "optional metric missing", edit: func(p *PodSample, s *Snapshot) {
			s.Required = AllMetrics &^ MetricOOMEvents
			p.Containers[0].Has &^= MetricOOMEvents
		}},
		{name: "stale optional-only exporter data is fine", edit: func(p *PodSample, s *Snapshot) {
			s.Required = AllMetrics &^ ExporterWorkload.Metrics()
			p.Seen[ExporterWorkload] = t0.Add(-time.Hour)
		}},
		{name: "no pods", pods: []PodKey{}, wantIs: ErrNoData, wantErr: []string{"no pods to aggregate"}},
		{name: "duplicate pod", pods: []PodKey{key, key}, wantErr: []string{"pod apps/web-a listed twice"}},
		{name: "two problems joined", edit: func(p *PodSample, _ *Snapshot) {
			p.Containers[0].Has &^= MetricIORate
			p.Seen[ExporterKubeState] = t0.Add(-time.Hour)
		}, wantIs: ErrNoData, wantErr: []string{"disk I/O", "stale data from kube-state-metrics"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := webPod("web-a", 0.25, 100*mib, 10, hist)
			p.Seen = [numExporters]time.Time{t0, t0, t0}
			snap := NewSnapshot(t0, time.Minute, p)
			if tc.edit != nil {
				tc.edit(snap.Pods[key], snap)
			}
			pods := tc.pods
			if pods == nil {
				pods = []PodKey{key}
			}
			_, err := snap.Aggregate(pods, "app")
			if tc.wantIs == nil && tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tc.wantIs != nil {
				assert.ErrorIs(t, err, tc.wantIs)
			} else {
				assert.NotErrorIs(t, err, ErrNoData)
			}
			for _, w := range tc.wantErr {
				assert.ErrorContains(t, err, w)
			}
			if tc.wantData != nil {
				var de *DataError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, tc.wantData, de)
			}
		})
	}
}

func TestAggregateOptionalMissingReported(t *testing.T) {
	p := webPod("web-a", 0.25, 100*mib, 10, []Bucket{{0.1, 10}, {inf, 10}})
	p.Containers[0].Has &^= MetricOOMEvents
	snap := NewSnapshot(t0, time.Minute, p)
	snap.Required = AllMetrics &^ MetricOOMEvents
	o, err := snap.Aggregate([]PodKey{p.Key}, "app")
	require.NoError(t, err)
	assert.Equal(t, MetricOOMEvents, o.Missing)
}

func TestDataErrorMessage(t *testing.T) {
	var pods []PodKey
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		pods = append(pods, PodKey{"ns", n})
	}
	err := &DataError{Err: ErrNoData, Metric: MetricProcessed, Pods: pods, Detail: "no series"}
	assert.EqualError(t, err, "telemetry: no data for processed requests (aware_workload_requests_processed_total) "+
		"(7 pods: ns/a, ns/b, ns/c, ns/d, ns/e and 2 more): no series")
	assert.True(t, errors.Is(errors.Join(errors.New("x"), err), ErrNoData))
	assert.Equal(t, "cpu usage (container_cpu_usage_seconds_total), OOM events (container_oom_events_total)",
		(MetricCPUUsage | MetricOOMEvents).String())
	assert.Equal(t, "no metric", Metric(0).String())
}

func TestNewSnapshotFreshness(t *testing.T) {
	p := PodSample{Key: PodKey{"ns", "p"}, Has: MetricReady, Ready: true}
	p.Seen[ExporterCAdvisor] = t0.Add(-time.Second)
	s := NewSnapshot(t0, time.Minute, p)
	got := s.Pods[p.Key].Seen
	assert.Equal(t, t0.Add(-time.Second), got[ExporterCAdvisor], "kept")
	assert.Equal(t, t0, got[ExporterKubeState], "filled: the pod has kube-state data")
	assert.True(t, got[ExporterWorkload].IsZero(), "no workload data")
	assert.Equal(t, t0, s.Newest())
	assert.Equal(t, []PodKey{{"ns", "p"}}, s.PodKeys())
}
