package scale

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sampleMetrics = `# HELP aware_controller_errors_total Failures, by where.
# TYPE aware_controller_errors_total counter
aware_controller_errors_total{where="observe"} 12
aware_controller_errors_total{where="status"} 1
# HELP aware_controller_recommendations_total Recommendations computed.
# TYPE aware_controller_recommendations_total counter
aware_controller_recommendations_total 4000
# HELP aware_controller_step_seconds Duration of one MPA step.
# TYPE aware_controller_step_seconds histogram
aware_controller_step_seconds_bucket{le="0.001"} 0
aware_controller_step_seconds_bucket{le="+Inf"} 4013
aware_controller_step_seconds_sum 40.13
aware_controller_step_seconds_count 4013
# HELP aware_controller_step_phase_seconds Duration of a phase of an MPA step, by phase.
# TYPE aware_controller_step_phase_seconds histogram
aware_controller_step_phase_seconds_bucket{phase="observe",le="+Inf"} 4000
aware_controller_step_phase_seconds_sum{phase="observe"} 3000
aware_controller_step_phase_seconds_count{phase="observe"} 4000
aware_controller_step_phase_seconds_bucket{phase="status",le="+Inf"} 1000
aware_controller_step_phase_seconds_sum{phase="status"} 250
aware_controller_step_phase_seconds_count{phase="status"} 1000
# HELP aware_controller_actuations_total Changes applied, by kind.
# TYPE aware_controller_actuations_total counter
aware_controller_actuations_total{kind="replicas"} 120
aware_controller_actuations_total{kind="resize"} 310
# HELP aware_controller_actuation_delay_seconds Time from a step's decision until the updater starts applying it.
# TYPE aware_controller_actuation_delay_seconds histogram
aware_controller_actuation_delay_seconds_bucket{le="+Inf"} 400
aware_controller_actuation_delay_seconds_sum 340
aware_controller_actuation_delay_seconds_count 400
# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 8000
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 4000
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PATCH"} 3
`

// sampleAgentMetrics is an agent runner's page.
const sampleAgentMetrics = `# TYPE aware_agents_hosted gauge
aware_agents_hosted 1000
# TYPE aware_agents_steps_total counter
aware_agents_steps_total{stage="Online"} 5000
aware_agents_steps_total{stage="Serving"} 20
# TYPE aware_agents_updates_total counter
aware_agents_updates_total{stage="Online"} 4900
# TYPE aware_agents_withheld_total counter
aware_agents_withheld_total{reason="NaNAction"} 2
# TYPE aware_agents_errors_total counter
aware_agents_errors_total 3
# TYPE aware_agents_episodes_total counter
aware_agents_episodes_total 1250
# TYPE aware_agents_training_seconds histogram
aware_agents_training_seconds_bucket{le="+Inf"} 4900
aware_agents_training_seconds_sum 61.5
aware_agents_training_seconds_count 4900
# TYPE aware_telemetry_snapshots_total counter
aware_telemetry_snapshots_total{result="ok"} 90
aware_telemetry_snapshots_total{result="error"} 4
# TYPE aware_telemetry_snapshot_seconds histogram
aware_telemetry_snapshot_seconds_bucket{le="+Inf"} 94
aware_telemetry_snapshot_seconds_sum 47
aware_telemetry_snapshot_seconds_count 94
# TYPE aware_telemetry_snapshots_late_total counter
aware_telemetry_snapshots_late_total 7
# TYPE go_gc_heap_live_bytes gauge
go_gc_heap_live_bytes 3.8854316e+08
`

func TestParseAgentCounters(t *testing.T) {
	c, err := parseCounters(strings.NewReader(sampleAgentMetrics))
	require.NoError(t, err)
	assert.Equal(t, 1000.0, c.AgentsHosted)
	assert.Equal(t, 388543160.0, c.LiveHeap)
	assert.Equal(t, map[string]float64{"Online": 5000, "Serving": 20}, c.AgentSteps)
	assert.Equal(t, map[string]float64{"Online": 4900}, c.AgentUpdates)
	assert.Equal(t, map[string]float64{"NaNAction": 2}, c.AgentWithheld)
	assert.Equal(t, 3.0, c.AgentErrors)
	assert.Equal(t, 1250.0, c.AgentEpisodes)
	assert.Equal(t, 4900.0, c.Trainings)
	assert.InDelta(t, 61.5, c.TrainingSeconds, 1e-9)
	assert.Equal(t, Snapshots{Taken: 90, Failed: 4, Late: 7, Mean: 500 * time.Millisecond}, c.snapshots())

	later := c
	later.Snapshots = map[string]float64{"ok": 100, "error": 4}
	later.SnapshotsTimed, later.SnapshotSeconds, later.SnapshotsLate = 104, 49, 9
	later.AgentSteps = map[string]float64{"Online": 6000, "Serving": 20}
	later.TrainingSeconds = 70
	d := later.since(c)
	assert.Equal(t, map[string]float64{"Online": 1000}, d.AgentSteps, "unchanged stages drop out")
	assert.InDelta(t, 8.5, d.TrainingSeconds, 1e-9)
	assert.Equal(t, 1000.0, d.AgentsHosted, "a gauge is read, not differenced")
	assert.Equal(t, Snapshots{Taken: 10, Late: 2, Mean: 200 * time.Millisecond}, d.snapshots())
}

func TestParseCounters(t *testing.T) {
	c, err := parseCounters(strings.NewReader(sampleMetrics))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"observe": 12, "status": 1}, c.Errors)
	assert.Equal(t, map[string]float64{"GET": 8000, "PATCH": 4003}, c.Requests)
	assert.Equal(t, 4013.0, c.Steps)
	assert.InDelta(t, 40.13, c.StepSeconds, 1e-9)
	assert.Equal(t, 4000.0, c.Recommendations)
	assert.Equal(t, map[string]float64{"replicas": 120, "resize": 310}, c.Actuations)
	assert.Equal(t, 400.0, c.Decisions)
	assert.InDelta(t, 340, c.DelaySeconds, 1e-9)
	assert.Equal(t, map[string]time.Duration{"observe": 750 * time.Millisecond, "status": 250 * time.Millisecond}, c.phases())
	later := c
	later.PhaseCount = map[string]float64{"observe": 4100, "status": 1000}
	later.PhaseSeconds = map[string]float64{"observe": 3100, "status": 250}
	assert.Equal(t, map[string]time.Duration{"observe": time.Second}, later.since(c).phases(), "the window's steps only; a phase none ran drops out")

	// A fresh controller has incremented no error yet: zero, not missing.
	empty, err := parseCounters(strings.NewReader("# TYPE up gauge\nup 1\n"))
	require.NoError(t, err)
	assert.Zero(t, sum(empty.Errors))
	assert.Zero(t, empty.Steps)
	assert.Zero(t, empty.Decisions)

	_, err = parseCounters(strings.NewReader("not { valid"))
	assert.Error(t, err)
}

func TestCountersSince(t *testing.T) {
	c0 := counters{Errors: map[string]float64{"observe": 12}, Steps: 13, StepSeconds: 1, Recommendations: 0,
		Requests: map[string]float64{"GET": 100}}
	c1 := counters{Errors: map[string]float64{"observe": 12, "status": 1}, Steps: 4013, StepSeconds: 40.13, Recommendations: 4000,
		Requests: map[string]float64{"GET": 8100, "PATCH": 4003}}
	d := c1.since(c0)
	assert.Equal(t, map[string]float64{"status": 1}, d.Errors, "an unchanged counter drops out")
	assert.Equal(t, map[string]float64{"GET": 8000, "PATCH": 4003}, d.Requests)
	assert.Equal(t, 4000.0, d.Steps)
	assert.InDelta(t, 39.13, d.StepSeconds, 1e-9)
	assert.Equal(t, 4000.0, d.Recommendations)
}

func TestScrapeCounters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(sampleMetrics))
	}))
	defer srv.Close()
	c, raw, err := scrapeCounters(context.Background(), srv.Client(), srv.URL+"/metrics")
	require.NoError(t, err)
	assert.Equal(t, 4013.0, c.Steps)
	assert.Equal(t, sampleMetrics, string(raw))
	_, _, err = scrapeCounters(context.Background(), srv.Client(), srv.URL+"/nope")
	assert.ErrorContains(t, err, "404")
}

func TestParseAPIWrites(t *testing.T) {
	const page = `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",group="autoscaling.aware.dev",resource="multidimpodautoscalers",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 120
apiserver_request_total{code="409",component="apiserver",group="autoscaling.aware.dev",resource="multidimpodautoscalers",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 3
apiserver_request_total{code="201",component="apiserver",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 999
apiserver_request_total{code="0",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 5
`
	got, err := parseAPIWrites(strings.NewReader(page))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"multidimpodautoscalers/status PATCH": 123, "events POST": 40}, got, "writes only, summed over codes")

	_, err = parseAPIWrites(strings.NewReader("# TYPE up gauge\nup 1\n"))
	require.ErrorContains(t, err, "no apiserver_request_total")

	assert.Equal(t, map[string]float64{"events POST": 10}, diff(got, map[string]float64{"multidimpodautoscalers/status PATCH": 123, "events POST": 30}))
}

func TestCountEvents(t *testing.T) {
	m := map[string]float64{}
	countEvent(m, &corev1.Event{Reason: "FailedScheduling", ReportingController: "default-scheduler", Series: &corev1.EventSeries{Count: 7}})
	countEvent(m, &corev1.Event{Reason: "Scaled", Source: corev1.EventSource{Component: "aware-controller"}, Count: 3})
	countEvent(m, &corev1.Event{Reason: "Scaled", Source: corev1.EventSource{Component: "aware-controller"}})
	countEvent(m, &corev1.Event{Reason: "Odd"})
	assert.Equal(t, map[string]float64{"default-scheduler FailedScheduling": 7, "aware-controller Scaled": 4, "? Odd": 1}, m)
	assert.Equal(t, "12 (default-scheduler FailedScheduling 7, aware-controller Scaled 4, other 1)", topCounts(m, 2, "none"))
	assert.Equal(t, "none", topCounts(nil, 2, "none"))
}
