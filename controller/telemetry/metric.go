package telemetry

import (
	"math/bits"
	"strings"
)

// Metric names one quantity of a PodSample. Values are bit flags, so a
// Metric also holds a set of them (MetricCPUUsage|MetricCPULimit, or
// AllMetrics).
type Metric uint32

// The quantities a Snapshot holds, with the series they come from.
const (
	// MetricCPUUsage is rate(container_cpu_usage_seconds_total), cores.
	MetricCPUUsage Metric = 1 << iota
	// MetricMemoryWorkingSet is avg_over_time(container_memory_working_set_bytes), bytes.
	MetricMemoryWorkingSet
	// MetricMemoryPeak is max_over_time(container_memory_working_set_bytes), bytes.
	MetricMemoryPeak
	// MetricIORate is rate of container_fs_reads_bytes_total + container_fs_writes_bytes_total, bytes/s.
	MetricIORate
	// MetricOOMEvents is increase(container_oom_events_total) over the window.
	MetricOOMEvents
	// MetricCPULimit is kube_pod_container_resource_limits{resource="cpu"}, cores.
	MetricCPULimit
	// MetricMemoryLimit is kube_pod_container_resource_limits{resource="memory"}, bytes.
	MetricMemoryLimit
	// MetricNetRate is the rate of container_network_receive_bytes_total +
	// container_network_transmit_bytes_total (pod level), bytes/s.
	MetricNetRate
	// MetricReady is kube_pod_status_ready{condition="true"}.
	MetricReady
	// MetricReceived is rate(aware_workload_requests_received_total), requests/s.
	MetricReceived
	// MetricProcessed is rate(aware_workload_requests_processed_total), requests/s.
	MetricProcessed
	// MetricFailed is rate(aware_workload_requests_failed_total), requests/s.
	MetricFailed
	// MetricLatency is the rate of the aware_workload_request_duration_seconds
	// histogram's buckets.
	MetricLatency

	metricEnd
)

// AllMetrics is every Metric: the default of WithRequired.
const AllMetrics = metricEnd - 1

// containerMetrics are reported per container; the others per pod.
const containerMetrics = MetricCPUUsage | MetricMemoryWorkingSet | MetricMemoryPeak | MetricIORate |
	MetricOOMEvents | MetricCPULimit | MetricMemoryLimit

// usageMetrics are what a pod that is not ready may lack: everything but its
// spec (limits) and its readiness, which kube-state-metrics reports as soon
// as the pod exists.
const usageMetrics = AllMetrics &^ (MetricCPULimit | MetricMemoryLimit | MetricReady)

var metricNames = [...]string{
	"cpu usage (container_cpu_usage_seconds_total)",
	"memory working set (container_memory_working_set_bytes)",
	"memory peak (container_memory_working_set_bytes)",
	"disk I/O (container_fs_reads_bytes_total, container_fs_writes_bytes_total)",
	"OOM events (container_oom_events_total)",
	`cpu limit (kube_pod_container_resource_limits{resource="cpu"})`,
	`memory limit (kube_pod_container_resource_limits{resource="memory"})`,
	"network (container_network_receive_bytes_total, container_network_transmit_bytes_total)",
	`readiness (kube_pod_status_ready{condition="true"})`,
	"received requests (aware_workload_requests_received_total)",
	"processed requests (aware_workload_requests_processed_total)",
	"failed requests (aware_workload_requests_failed_total)",
	"latency histogram (aware_workload_request_duration_seconds_bucket)",
}

// String names the metric and its series; a set is listed with ", ".
func (m Metric) String() string {
	if m == 0 {
		return "no metric"
	}
	var parts []string
	for b := range m.each() {
		if i := bits.TrailingZeros32(uint32(b)); i < len(metricNames) {
			parts = append(parts, metricNames[i])
		} else {
			parts = append(parts, "unknown metric")
		}
	}
	return strings.Join(parts, ", ")
}

// each yields the single metrics of the set m, in order.
func (m Metric) each() func(yield func(Metric) bool) {
	return func(yield func(Metric) bool) {
		for r := uint32(m); r != 0; r &= r - 1 {
			if !yield(Metric(r & -r)) {
				return
			}
		}
	}
}

// Exporter is where a metric comes from; staleness is judged per exporter
// because each is scraped on its own.
type Exporter uint8

// The exporters of the metric contract.
const (
	// ExporterCAdvisor reports container usage (the kubelet's cAdvisor).
	ExporterCAdvisor Exporter = iota
	// ExporterKubeState reports pod spec and status (kube-state-metrics).
	ExporterKubeState
	// ExporterWorkload reports requests (the AWARE workload server).
	ExporterWorkload

	numExporters
)

var exporterNames = [numExporters]string{"cadvisor", "kube-state-metrics", "workload"}

// String is the exporter's name, as in the freshness query's "source" label.
func (e Exporter) String() string {
	if e < numExporters {
		return exporterNames[e]
	}
	return "unknown exporter"
}

// Metrics are the metrics the exporter reports.
func (e Exporter) Metrics() Metric {
	switch e {
	case ExporterCAdvisor:
		return MetricCPUUsage | MetricMemoryWorkingSet | MetricMemoryPeak | MetricIORate | MetricOOMEvents | MetricNetRate
	case ExporterKubeState:
		return MetricCPULimit | MetricMemoryLimit | MetricReady
	case ExporterWorkload:
		return MetricReceived | MetricProcessed | MetricFailed | MetricLatency
	}
	return 0
}
