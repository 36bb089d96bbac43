package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Runner runs the application once; it must be safe for concurrent use.
// *app.Chain implements it.
type Runner interface {
	Run(ctx context.Context) (segments.Result, error)
}

// StatusClientClosedRequest is the (nginx) status logged and counted when the
// client went away before the application finished.
const StatusClientClosedRequest = 499

// InvokeResponse is the JSON body /invoke returns.
type InvokeResponse struct {
	App string `json:"app"`
	// Result is the work the application did (absent on error).
	Result *segments.Result `json:"result,omitempty"`
	// DurationSeconds is the time the application ran (0 if it did not run).
	DurationSeconds float64 `json:"durationSeconds"`
	// QueueSeconds is the time the request waited for one of the server's
	// Concurrency slots before running (absent if it did not wait).
	QueueSeconds float64 `json:"queueSeconds,omitempty"`
	// Error describes why the request failed.
	Error string `json:"error,omitempty"`
}

// handler holds the HTTP endpoints' state; it is separate from Run's
// lifecycle so that tests can drive it with httptest.
type handler struct {
	app         string
	maxInFlight int64
	slots       *slots // nil: unbounded concurrency
	m           *metrics
	log         *slog.Logger

	runner atomic.Pointer[runnerBox] // nil until setup completes
	ready  atomic.Bool
	// inFlight counts the requests in the server, waiting or running; it
	// is what MaxInFlight bounds.
	inFlight atomic.Int64
	runs     runGroup
	errLog   sampler
}

type runnerBox struct{ r Runner }

func newHandler(app string, maxInFlight, concurrency int, m *metrics, log *slog.Logger) *handler {
	h := &handler{app: app, maxInFlight: int64(maxInFlight), m: m, log: log}
	if concurrency > 0 {
		h.slots = newSlots(concurrency)
	}
	return h
}

// setRunner installs the prepared application and marks the server ready.
func (h *handler) setRunner(r Runner) {
	h.runner.Store(&runnerBox{r})
	h.setReady(true)
}

func (h *handler) setReady(v bool) {
	h.ready.Store(v)
	if v {
		h.m.ready.Set(1)
	} else {
		h.m.ready.Set(0)
	}
}

func (h *handler) healthz(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, "ok\n")
}

func (h *handler) readyz(w http.ResponseWriter, _ *http.Request) {
	if !h.ready.Load() {
		writeText(w, http.StatusServiceUnavailable, "not ready\n")
		return
	}
	writeText(w, http.StatusOK, "ready\n")
}

func (h *handler) invoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET, POST")
		writeText(w, http.StatusMethodNotAllowed, "method not allowed: use GET or POST\n")
		return
	}
	h.m.received.Inc()
	box := h.runner.Load()
	if box == nil || !h.runs.enter() {
		h.reject(w, http.StatusServiceUnavailable, ReasonUnavailable, "not ready: setting up or shutting down")
		return
	}
	defer h.runs.exit()
	if n := h.inFlight.Add(1); h.maxInFlight > 0 && n > h.maxInFlight {
		h.inFlight.Add(-1)
		h.reject(w, http.StatusServiceUnavailable, ReasonOverload, "overloaded: too many requests in flight")
		return
	}
	queued, err := h.acquire(r.Context())
	if err != nil {
		h.inFlight.Add(-1)
		h.m.failed.WithLabelValues(ReasonCanceledWaiting).Inc()
		writeJSON(w, StatusClientClosedRequest, InvokeResponse{App: h.app, QueueSeconds: queued.Seconds(),
			Error: "cancelled while waiting for a concurrency slot: " + err.Error()})
		return
	}
	h.m.inFlight.Inc()
	start := time.Now()
	res, err := box.r.Run(r.Context())
	elapsed := time.Since(start)
	if h.slots != nil {
		h.slots.release()
	}
	h.m.inFlight.Dec()
	h.inFlight.Add(-1)
	h.m.duration.Observe(elapsed.Seconds())

	resp := InvokeResponse{App: h.app, DurationSeconds: elapsed.Seconds(), QueueSeconds: queued.Seconds()}
	switch {
	case err == nil:
		h.m.processed.Inc()
		resp.Result = &res
		writeJSON(w, http.StatusOK, resp)
	case r.Context().Err() != nil:
		h.m.failed.WithLabelValues(ReasonCanceled).Inc()
		resp.Error = err.Error()
		writeJSON(w, StatusClientClosedRequest, resp)
	default:
		h.m.failed.WithLabelValues(ReasonError).Inc()
		if ok, suppressed := h.errLog.allow(time.Now()); ok {
			h.log.Warn("invoke failed", "app", h.app, "err", err, "suppressedSinceLast", suppressed)
		}
		resp.Error = err.Error()
		writeJSON(w, http.StatusInternalServerError, resp)
	}
}

// acquire takes one of the Concurrency slots, waiting in FIFO order (and
// in the queued gauge) while all are taken. It returns how long it waited,
// and ctx's error if the request left the queue without a slot.
func (h *handler) acquire(ctx context.Context) (time.Duration, error) {
	if h.slots == nil || h.slots.tryAcquire() {
		return 0, nil
	}
	h.m.queued.Inc()
	defer h.m.queued.Dec()
	start := time.Now()
	err := h.slots.acquire(ctx)
	return time.Since(start), err
}

func (h *handler) reject(w http.ResponseWriter, status int, reason, msg string) {
	h.m.failed.WithLabelValues(reason).Inc()
	w.Header().Set("Retry-After", "1")
	writeJSON(w, status, InvokeResponse{App: h.app, Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // InvokeResponse always marshals; keep the failure visible anyway
		writeText(w, http.StatusInternalServerError, "encode response: "+err.Error()+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeText(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(s))
}

// runGroup counts running requests and, once closed, admits no more; wait
// blocks until none is running. Unlike sync.WaitGroup, enter may race with
// close safely.
type runGroup struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when closed && n == 0
}

func (g *runGroup) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

func (g *runGroup) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.closed && g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// closeAndWait stops admitting runs and waits until the running ones finish
// or ctx is done.
func (g *runGroup) closeAndWait(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	if g.n == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sampler lets through at most one event per second and counts the rest, so
// that a failing application does not flood the log at thousands of
// requests per second.
type sampler struct {
	last       atomic.Int64 // unix nanoseconds of the last allowed event
	suppressed atomic.Int64
}

func (s *sampler) allow(now time.Time) (ok bool, suppressed int64) {
	last := s.last.Load()
	if now.UnixNano()-last < int64(time.Second) || !s.last.CompareAndSwap(last, now.UnixNano()) {
		s.suppressed.Add(1)
		return false, 0
	}
	return true, s.suppressed.Swap(0)
}
