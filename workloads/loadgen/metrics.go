package loadgen

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the generator's live Prometheus metrics.
type Metrics struct {
	sent       prometheus.Counter
	completed  prometheus.Counter
	failed     *prometheus.CounterVec
	dropped    prometheus.Counter
	latency    prometheus.Histogram
	inFlight   prometheus.Gauge
	targetRate prometheus.Gauge
}

// NewMetrics creates the generator's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aware_loadgen_requests_sent_total", Help: "Requests dispatched.",
		}),
		completed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aware_loadgen_requests_completed_total", Help: "Requests that got a 2xx response.",
		}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aware_loadgen_requests_failed_total", Help: "Requests that failed, by kind (http_<status>, timeout, connection, canceled, other).",
		}, []string{"kind"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aware_loadgen_requests_dropped_total", Help: "Arrivals not sent because the cap on outstanding requests was reached.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:                            "aware_loadgen_request_latency_seconds",
			Help:                            "Latency of completed requests from their intended send time.",
			Buckets:                         []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "aware_loadgen_requests_in_flight", Help: "Requests sent and not yet answered.",
		}),
		targetRate: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "aware_loadgen_target_rate", Help: "Scheduled arrivals per second over the last second of replay time.",
		}),
	}
	for _, k := range []string{ErrTimeout, ErrConnection, ErrCanceled, ErrOther} {
		m.failed.WithLabelValues(k)
	}
	for _, c := range []prometheus.Collector{m.sent, m.completed, m.failed, m.dropped, m.latency, m.inFlight, m.targetRate} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register loadgen metrics: %w", err)
		}
	}
	return m, nil
}
