package telemetry

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Matcher is a PromQL label matcher, e.g. {Name: "cluster", Op: "=", Value:
// "prod"}, added to every selector of a Source's queries.
type Matcher struct {
	Name  string
	Op    string // "=", "!=", "=~" or "!~"
	Value string
}

// Validate checks the label name, the operator and, for regex operators,
// that Value compiles (Prometheus uses RE2, as Go does).
func (m Matcher) Validate() error {
	if !model.LegacyValidation.IsValidLabelName(m.Name) {
		return fmt.Errorf("matcher %s: label name %q is not a valid Prometheus label name", m, m.Name)
	}
	switch m.Op {
	case "=", "!=":
	case "=~", "!~":
		if _, err := regexp.Compile("^(?:" + m.Value + ")$"); err != nil {
			return fmt.Errorf("matcher %s: %w", m, err)
		}
	default:
		return fmt.Errorf("matcher %s: operator %q is not one of =, !=, =~, !~", m, m.Op)
	}
	return nil
}

// String formats the matcher in PromQL, the value quoted.
func (m Matcher) String() string { return m.Name + m.Op + strconv.Quote(m.Value) }

// queryKind says how a query's result fills a Snapshot.
type queryKind uint8

const (
	kindContainer queryKind = iota // by (namespace, pod, container)
	kindLimits                     // by (namespace, pod, container, resource)
	kindPod                        // by (namespace, pod)
	kindLatency                    // by (namespace, pod, le)
	kindFreshness                  // by (namespace, pod, source)
)

// query is one of the fixed PromQL queries of a snapshot.
type query struct {
	name   string
	kind   queryKind
	metric Metric // what it fills (kindLimits: both limits; kindFreshness: none)
	text   string
}

// queryNames are the snapshot's queries in order: Stats reports them so.
var queryNames = []string{"cpu", "memory", "memory_peak", "io", "oom", "limits", "network", "ready",
	"received", "processed", "failed", "latency", "freshness"}

// buildQueries returns the snapshot's queries for the rate window, every
// selector carrying pod!="" and the extra matchers.
func buildQueries(window time.Duration, extra []Matcher) []query {
	w := model.Duration(window).String()
	parts := []string{`pod!=""`}
	for _, m := range extra {
		parts = append(parts, m.String())
	}
	pod := "{" + strings.Join(parts, ",") + "}"
	// cAdvisor also reports the pod's cgroup (container="") and the pause
	// container (container="POD"): only real containers count.
	ctr := "{" + strings.Join(append(parts, `container!=""`, `container!="POD"`), ",") + "}"
	with := func(sel, m string) string { return sel[:len(sel)-1] + "," + m + "}" }

	byC := "sum by (namespace, pod, container) "
	byP := "sum by (namespace, pod) "
	rate := func(by, metric, sel string) string {
		return by + "(rate(" + metric + sel + "[" + w + "]))"
	}
	return []query{
		{"cpu", kindContainer, MetricCPUUsage, rate(byC, "container_cpu_usage_seconds_total", ctr)},
		{"memory", kindContainer, MetricMemoryWorkingSet, byC + "(avg_over_time(container_memory_working_set_bytes" + ctr + "[" + w + "]))"},
		{"memory_peak", kindContainer, MetricMemoryPeak, byC + "(max_over_time(container_memory_working_set_bytes" + ctr + "[" + w + "]))"},
		// Reads and writes are summed per container first: their series
		// differ only in the metric name, which rate drops.
		{"io", kindContainer, MetricIORate, rate(byC, "container_fs_reads_bytes_total", ctr) + " + " + rate(byC, "container_fs_writes_bytes_total", ctr)},
		{"oom", kindContainer, MetricOOMEvents, byC + "(increase(container_oom_events_total" + ctr + "[" + w + "]))"},
		{"limits", kindLimits, MetricCPULimit | MetricMemoryLimit,
			`sum by (namespace, pod, container, resource) (kube_pod_container_resource_limits` + with(pod, `resource=~"cpu|memory"`) + ")"},
		// Network is per pod (the pod's network namespace), over all interfaces.
		{"network", kindPod, MetricNetRate, rate(byP, "container_network_receive_bytes_total", pod) + " + " + rate(byP, "container_network_transmit_bytes_total", pod)},
		{"ready", kindPod, MetricReady, `max by (namespace, pod) (kube_pod_status_ready` + with(pod, `condition="true"`) + ")"},
		{"received", kindPod, MetricReceived, rate(byP, "aware_workload_requests_received_total", pod)},
		{"processed", kindPod, MetricProcessed, rate(byP, "aware_workload_requests_processed_total", pod)},
		{"failed", kindPod, MetricFailed, rate(byP, "aware_workload_requests_failed_total", pod)},
		{"latency", kindLatency, MetricLatency, "sum by (namespace, pod, le) (rate(aware_workload_request_duration_seconds_bucket" + pod + "[" + w + "]))"},
		// The newest sample of each pod per exporter, to judge staleness.
		{"freshness", kindFreshness, 0, "max by (namespace, pod, source) (" +
			`label_replace(timestamp(container_memory_working_set_bytes` + ctr + `), "source", "cadvisor", "", "")` +
			` or label_replace(timestamp(kube_pod_status_ready` + with(pod, `condition="true"`) + `), "source", "kube-state-metrics", "", "")` +
			` or label_replace(timestamp(aware_workload_requests_received_total` + pod + `), "source", "workload", "", ""))`},
	}
}

// Queries returns the PromQL text of the queries a Snapshot with this
// window runs, by name (see Stats for the names).
func (s *Source) Queries(window time.Duration) map[string]string {
	out := map[string]string{}
	for _, q := range buildQueries(window, s.matchers) {
		out[q.name] = q.text
	}
	return out
}

// validWindow checks a rate window: positive and whole milliseconds
// (PromQL's resolution).
func validWindow(window time.Duration) error {
	if window <= 0 || window%time.Millisecond != 0 {
		return fmt.Errorf("telemetry: window %s must be a positive whole number of milliseconds", window)
	}
	return nil
}
