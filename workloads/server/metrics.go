package server

import (
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Reasons a request is counted in aware_workload_requests_failed_total.
const (
	ReasonError       = "error"       // the application returned an error
	ReasonOverload    = "overload"    // rejected: MaxInFlight requests already running
	ReasonUnavailable = "unavailable" // rejected: not ready (setting up or shutting down)
	ReasonCanceled    = "canceled"    // the client went away or the server cancelled the run
	// ReasonCanceledWaiting: the client went away (or the server shut down)
	// while the request waited for a Concurrency slot; it never ran.
	ReasonCanceledWaiting = "canceled_waiting"
)

var failureReasons = []string{ReasonError, ReasonOverload, ReasonUnavailable, ReasonCanceled, ReasonCanceledWaiting}

// DurationBuckets are the classic buckets of the request duration histogram,
// covering 1 ms to 10 s; the histogram is also exposed as a native histogram
// to scrapers that negotiate it.
var DurationBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// metrics are the server's Prometheus metrics, on their own registry.
type metrics struct {
	reg       *prometheus.Registry
	duration  prometheus.Histogram
	received  prometheus.Counter
	processed prometheus.Counter
	failed    *prometheus.CounterVec
	inFlight  prometheus.Gauge
	queued    prometheus.Gauge
	ready     prometheus.Gauge
}

func newMetrics(app string) *metrics {
	labels := prometheus.Labels{"app": app}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:                            "aware_workload_request_duration_seconds",
			Help:                            "Time to run the application once, for requests that ran (succeeded or failed).",
			ConstLabels:                     labels,
			Buckets:                         DurationBuckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}),
		received: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "aware_workload_requests_received_total",
			Help:        "Requests to /invoke received, including rejected ones.",
			ConstLabels: labels,
		}),
		processed: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "aware_workload_requests_processed_total",
			Help:        "Requests to /invoke that ran the application successfully.",
			ConstLabels: labels,
		}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "aware_workload_requests_failed_total",
			Help:        "Requests to /invoke that failed, by reason: error, overload, unavailable, canceled, canceled_waiting.",
			ConstLabels: labels,
		}, []string{"reason"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "aware_workload_requests_in_flight",
			Help:        "Requests currently running the application.",
			ConstLabels: labels,
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "aware_workload_requests_queued",
			Help:        "Requests waiting for one of the server's concurrency slots to run the application.",
			ConstLabels: labels,
		}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "aware_workload_ready",
			Help:        "1 when the server is ready to serve (setup done, not shutting down), else 0.",
			ConstLabels: labels,
		}),
	}
	for _, r := range failureReasons {
		m.failed.WithLabelValues(r)
	}
	m.reg.MustRegister(
		m.duration, m.received, m.processed, m.failed, m.inFlight, m.queued, m.ready,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "aware_workload_gomaxprocs",
			Help:        "Effective GOMAXPROCS of the server process.",
			ConstLabels: labels,
		}, func() float64 { return float64(runtime.GOMAXPROCS(0)) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}
