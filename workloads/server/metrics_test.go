package server

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

func TestMetricsCounters(t *testing.T) {
	fail := false
	a := &fakeApp{run: func(context.Context) (segments.Result, error) {
		if fail {
			return segments.Result{}, errBoom
		}
		return segments.Result{Items: 1}, nil
	}}
	s, ts := newTestServer(t, Config{App: "light"}, a)
	for range 3 {
		status, _ := do(t, http.MethodPost, ts.URL+"/invoke")
		require.Equal(t, 200, status)
	}
	fail = true
	status, _ := do(t, http.MethodPost, ts.URL+"/invoke")
	require.Equal(t, 500, status)

	want := `
# HELP aware_workload_requests_failed_total Requests to /invoke that failed, by reason: error, overload, unavailable, canceled, canceled_waiting.
# TYPE aware_workload_requests_failed_total counter
aware_workload_requests_failed_total{app="light",reason="canceled"} 0
aware_workload_requests_failed_total{app="light",reason="canceled_waiting"} 0
aware_workload_requests_failed_total{app="light",reason="error"} 1
aware_workload_requests_failed_total{app="light",reason="overload"} 0
aware_workload_requests_failed_total{app="light",reason="unavailable"} 0
# HELP aware_workload_requests_in_flight Requests currently running the application.
# TYPE aware_workload_requests_in_flight gauge
aware_workload_requests_in_flight{app="light"} 0
# HELP aware_workload_requests_queued Requests waiting for one of the server's concurrency slots to run the application.
# TYPE aware_workload_requests_queued gauge
aware_workload_requests_queued{app="light"} 0
# HELP aware_workload_requests_processed_total Requests to /invoke that ran the application successfully.
# TYPE aware_workload_requests_processed_total counter
aware_workload_requests_processed_total{app="light"} 3
# HELP aware_workload_requests_received_total Requests to /invoke received, including rejected ones.
# TYPE aware_workload_requests_received_total counter
aware_workload_requests_received_total{app="light"} 4
# HELP aware_workload_ready 1 when the server is ready to serve (setup done, not shutting down), else 0.
# TYPE aware_workload_ready gauge
aware_workload_ready{app="light"} 1
`
	require.NoError(t, testutil.GatherAndCompare(s.Registry(), strings.NewReader(want),
		"aware_workload_requests_failed_total", "aware_workload_requests_in_flight", "aware_workload_requests_queued",
		"aware_workload_requests_processed_total", "aware_workload_requests_received_total",
		"aware_workload_ready"))
	assert.Equal(t, uint64(4), histCount(t, s))
}

func TestMetricsDurationHistogramIsClassicAndNative(t *testing.T) {
	s, _ := newTestServer(t, Config{App: "light"}, &fakeApp{})
	s.m.duration.Observe(0.002)
	s.m.duration.Observe(0.3)
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "aware_workload_request_duration_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		require.Len(t, h.GetBucket(), len(DurationBuckets))
		assert.Equal(t, 0.001, h.GetBucket()[0].GetUpperBound())
		assert.Equal(t, 10.0, h.GetBucket()[len(DurationBuckets)-1].GetUpperBound())
		assert.Equal(t, uint64(1), h.GetBucket()[1].GetCumulativeCount(), "0.002 s falls in le=0.0025")
		assert.NotNil(t, h.Schema, "native histogram schema must be set")
		assert.NotEmpty(t, h.GetPositiveSpan(), "native buckets must be populated")
		return
	}
	t.Fatal("duration histogram not gathered")
}

func TestMetricsEndpoint(t *testing.T) {
	_, ts := newTestServer(t, Config{App: "light"}, &fakeApp{})
	status, _ := do(t, http.MethodPost, ts.URL+"/invoke")
	require.Equal(t, 200, status)
	status, body := do(t, http.MethodGet, ts.URL+"/metrics")
	require.Equal(t, 200, status)
	for _, want := range []string{
		`aware_workload_request_duration_seconds_bucket{app="light",le="0.001"}`,
		`aware_workload_request_duration_seconds_count{app="light"} 1`,
		`aware_workload_requests_processed_total{app="light"} 1`,
		fmt.Sprintf(`aware_workload_gomaxprocs{app="light"} %d`, runtime.GOMAXPROCS(0)),
		"go_goroutines ",
		"go_gc_duration_seconds",
		"process_cpu_seconds_total ",
		"process_resident_memory_bytes ",
	} {
		assert.Contains(t, body, want)
	}
}
