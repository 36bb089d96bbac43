package twin

import (
	"hash/fnv"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The exported series: what cAdvisor, kube-state-metrics and the workload
// server report for real pods, with the same names and the labels the
// Prometheus adaptor reads.
var (
	podLabels       = []string{"namespace", "pod"}
	containerLabels = []string{"namespace", "pod", "container"}

	descCPU = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Simulated cumulative CPU time consumed by the container, in core-seconds (its rate is the simulated usage in cores).", containerLabels, nil)
	descWorkingSet = prometheus.NewDesc("container_memory_working_set_bytes",
		"Simulated working set of the container, in bytes (the application's share per Running pod).", containerLabels, nil)
	descFsReads = prometheus.NewDesc("container_fs_reads_bytes_total",
		"Simulated cumulative bytes read from disk by the container.", containerLabels, nil)
	descFsWrites = prometheus.NewDesc("container_fs_writes_bytes_total",
		"Simulated cumulative bytes written to disk by the container.", containerLabels, nil)
	descNetRecv = prometheus.NewDesc("container_network_receive_bytes_total",
		"Simulated cumulative bytes received by the pod.", podLabels, nil)
	descNetSent = prometheus.NewDesc("container_network_transmit_bytes_total",
		"Simulated cumulative bytes transmitted by the pod.", podLabels, nil)
	descOOM = prometheus.NewDesc("container_oom_events_total",
		"Simulated count of out-of-memory kills of the container.", containerLabels, nil)
	descLimits = prometheus.NewDesc("kube_pod_container_resource_limits",
		"The container's resource limits as applied (status, else spec).", append(containerLabels[:3:3], "resource", "unit"), nil)
	descReady = prometheus.NewDesc("kube_pod_status_ready",
		"Whether the pod is Ready (condition=\"true\" only; 0 without a Ready condition).", append(podLabels[:2:2], "condition"), nil)
	descDuration = prometheus.NewDesc("aware_workload_request_duration_seconds",
		"Simulated time to run the application once, filled so that histogram_quantile gives the simulated p50, p95 and p99.", podLabels, nil)
	descReceived = prometheus.NewDesc("aware_workload_requests_received_total",
		"Simulated requests to /invoke received (the arrival rate).", podLabels, nil)
	descProcessed = prometheus.NewDesc("aware_workload_requests_processed_total",
		"Simulated requests to /invoke that ran the application successfully.", podLabels, nil)
	descFailed = prometheus.NewDesc("aware_workload_requests_failed_total",
		"Simulated requests to /invoke that failed (timed out in the backlog or lost to an OOM kill).", podLabels, nil)
)

// collector turns the last snapshot into const metrics, so a scrape costs
// no locks on the tick and nothing between scrapes. With shards > 1 it
// exports only the applications of shard (shardOf).
type collector struct {
	t             *Twin
	shard, shards int
}

// shardOf is the shard of n that the application of Deployment
// namespace/name belongs to: a hash of its name, so that an application
// stays in its shard (and its series keep their scrape target) whatever
// applications come and go.
func shardOf(namespace, name string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	_, _ = h.Write([]byte{'/'})
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % uint32(n))
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCPU, descWorkingSet, descFsReads, descFsWrites, descNetRecv, descNetSent,
		descOOM, descLimits, descReady, descDuration, descReceived, descProcessed, descFailed} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.t.snap.Load()
	counter := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
	}
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	for a := range s.apps {
		if st := &s.apps[a].status; c.shards > 1 && shardOf(st.Namespace, st.Deployment, c.shards) != c.shard {
			continue
		}
		for k := range s.apps[a].pods {
			p := &s.apps[a].pods[k]
			ns, pod, ctr := p.namespace, p.name, p.container
			ready := 0.0
			if p.ready {
				ready = 1
			}
			gauge(descReady, ready, ns, pod, "true")
			if p.cpuLimit > 0 {
				gauge(descLimits, p.cpuLimit, ns, pod, ctr, "cpu", "core")
			}
			if p.memLimit > 0 {
				gauge(descLimits, p.memLimit, ns, pod, ctr, "memory", "byte")
			}
			if !p.running {
				continue
			}
			pc := &p.c
			counter(descCPU, pc.cpu, ns, pod, ctr)
			gauge(descWorkingSet, pc.workingSet, ns, pod, ctr)
			counter(descFsReads, pc.fsRead, ns, pod, ctr)
			counter(descFsWrites, pc.fsWrite, ns, pod, ctr)
			counter(descOOM, pc.oom, ns, pod, ctr)
			counter(descNetRecv, pc.netRecv, ns, pod)
			counter(descNetSent, pc.netSent, ns, pod)
			counter(descReceived, pc.received, ns, pod)
			counter(descProcessed, pc.processed, ns, pod)
			counter(descFailed, pc.failed, ns, pod)
			// Classic buckets count whole requests: the cumulative
			// fractional counts are floored, which keeps them
			// non-decreasing in time and across bounds.
			count := math.Floor(pc.histCount)
			buckets := make(map[float64]uint64, len(s.bounds))
			for b, le := range s.bounds {
				buckets[le] = uint64(math.Min(math.Floor(pc.buckets[b]), count))
			}
			ch <- prometheus.MustNewConstHistogram(descDuration, uint64(count), pc.histSum, buckets, ns, pod)
		}
	}
}

// ownMetrics are the twin's own series.
type ownMetrics struct {
	ticks    prometheus.Counter
	duration prometheus.Histogram
	tracked  prometheus.Gauge
	advanced prometheus.Gauge
	running  prometheus.Gauge
	known    prometheus.Gauge
	step     prometheus.Gauge
}

func newOwnMetrics(apps int, step time.Duration) ownMetrics {
	m := ownMetrics{
		ticks: prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_twin_ticks_total",
			Help: "Ticks done: each advanced every application with a Running pod by one simulator step."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "aware_twin_tick_duration_seconds",
			Help:    "Wall-clock time of a tick (reading the caches, stepping the simulator, building the snapshot).",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}}),
		tracked: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aware_twin_apps_tracked",
			Help: "Applications with a Deployment in the cluster."}),
		advanced: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aware_twin_apps_advanced",
			Help: "Applications advanced at the last tick (those with a Running pod)."}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aware_twin_pods_running",
			Help: "Running pods of the tracked applications at the last tick."}),
		known: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aware_twin_apps_known",
			Help: "Applications the twin simulates."}),
		step: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aware_twin_sim_step_seconds",
			Help: "Simulated seconds per tick."}),
	}
	m.known.Set(float64(apps))
	m.step.Set(step.Seconds())
	return m
}

func (m ownMetrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.ticks, m.duration, m.tracked, m.advanced, m.running, m.known, m.step} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
