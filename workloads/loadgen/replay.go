package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aware-autoscaler/aware/workloads/trace"
)

// Pseudo trace names that BuildSchedule accepts besides a trace file.
const (
	TraceSynthetic = "synthetic" // trace.Generate with trace.Synthetic
	TraceConstant  = "constant"  // evenly spaced arrivals
	TracePoisson   = "poisson"   // homogeneous Poisson arrivals
)

// BuildSchedule turns a trace (a file or a pseudo trace name), a target
// mean rate, a window of the trace (start and length; length 0 runs to the
// end of a trace file) and a seed into arrival offsets. Errors name the
// flags of `aware loadgen`: --trace, --rate, --window-start, --duration.
func BuildSchedule(name string, rate float64, start, length time.Duration, seed uint64) (Schedule, error) {
	switch name {
	case TraceConstant:
		return Constant(rate, length)
	case TracePoisson:
		return Poisson(rate, length, seed)
	}
	var (
		s   trace.Series
		err error
	)
	if name == TraceSynthetic {
		if length <= 0 {
			return Schedule{}, fmt.Errorf("--duration %s: must be positive for a synthetic trace", length)
		}
		s, err = trace.Generate(trace.Synthetic(rate), time.Second, start+length, seed)
	} else {
		s, err = trace.Load(name)
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("--trace: %w", err)
	}
	if length == 0 { // the rest of the trace
		length = s.Span() - start
	}
	if s, err = trace.Window(s, start, length); err != nil {
		return Schedule{}, fmt.Errorf("--window-start/--duration: %w", err)
	}
	if s, err = trace.ScaleToMean(s, rate); err != nil {
		return Schedule{}, fmt.Errorf("--rate: %w", err)
	}
	arr, err := trace.Arrivals(s, seed)
	if err != nil {
		return Schedule{}, fmt.Errorf("--trace %s: %w", name, err)
	}
	sched, err := NewSchedule(arr, s.Span())
	if err != nil {
		return Schedule{}, fmt.Errorf("arrivals of %s: %w", name, err)
	}
	return sched, nil
}

// ReplayConfig is one replay of a trace against a target (`aware loadgen`).
type ReplayConfig struct {
	Target         string        // URL to send requests to
	Trace          string        // trace file or pseudo trace name (BuildSchedule)
	Rate           float64       // target mean rate, requests per second
	WindowStart    time.Duration // offset of the replayed window in the trace
	Duration       time.Duration // length of the window (0: to the end of a trace file)
	Speed          float64       // replay speed: 1 is real time
	Seed           uint64        // of the arrivals and the synthetic trace
	MetricsAddr    string        // serve the generator's Prometheus metrics here ("": do not)
	JSON           bool          // print the report as JSON
	MaxOutstanding int           // requests in flight at most
	Timeout        time.Duration // per-request timeout
}

// Replay replays cfg's schedule against cfg.Target, open loop, and writes
// the report to out (a table, or JSON).
func Replay(ctx context.Context, cfg ReplayConfig, out io.Writer) error {
	sched, err := BuildSchedule(cfg.Trace, cfg.Rate, cfg.WindowStart, cfg.Duration, cfg.Seed)
	if err != nil {
		return err
	}
	opts := []Option{WithSpeed(cfg.Speed), WithMaxOutstanding(cfg.MaxOutstanding), WithTimeout(cfg.Timeout)}
	if cfg.MetricsAddr != "" {
		reg := prometheus.NewRegistry()
		m, err := NewMetrics(reg)
		if err != nil {
			return err
		}
		stop, err := ServeMetrics(cfg.MetricsAddr, reg)
		if err != nil {
			return err
		}
		defer stop()
		opts = append(opts, WithMetrics(m))
	}
	g, err := New(cfg.Target, opts...)
	if err != nil {
		return err
	}
	slog.Info("replaying", "target", cfg.Target, "trace", cfg.Trace, "arrivals", len(sched.Arrivals),
		"length", sched.Length, "speed", cfg.Speed, "rate", fmt.Sprintf("%.1f req/s", sched.Rate()*cfg.Speed))
	rep, runErr := g.Run(ctx, sched)
	if cfg.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.WriteTable(out)
	}
	if err != nil {
		return err
	}
	return runErr
}

// ServeMetrics serves reg at /metrics on addr until the returned function
// is called.
func ServeMetrics(addr string, reg *prometheus.Registry) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Warn("metrics server", "err", err)
		}
	}()
	slog.Info("serving load generator metrics", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
