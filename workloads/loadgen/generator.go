package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults for a Generator's options.
const (
	DefaultMethod         = http.MethodPost
	DefaultMaxOutstanding = 1024
	DefaultTimeout        = 10 * time.Second
)

// Generator replays schedules against one HTTP target.
type Generator struct {
	target         string
	method         string
	speed          float64
	maxOutstanding int
	timeout        time.Duration
	client         *http.Client
	metrics        *Metrics
}

// Option customises a Generator.
type Option func(*Generator)

// WithMethod sets the HTTP method (default POST).
func WithMethod(m string) Option { return func(g *Generator) { g.method = m } }

// WithSpeed replays the schedule speed times faster (offsets are divided by
// speed); 1 is real time.
func WithSpeed(speed float64) Option { return func(g *Generator) { g.speed = speed } }

// WithMaxOutstanding caps requests in flight; arrivals beyond it are dropped
// and counted (default DefaultMaxOutstanding).
func WithMaxOutstanding(n int) Option { return func(g *Generator) { g.maxOutstanding = n } }

// WithTimeout bounds each request (default DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(g *Generator) { g.timeout = d } }

// WithHTTPClient replaces the tuned default client (NewHTTPClient).
func WithHTTPClient(c *http.Client) Option { return func(g *Generator) { g.client = c } }

// WithMetrics makes the generator update m while it runs.
func WithMetrics(m *Metrics) Option { return func(g *Generator) { g.metrics = m } }

// New validates the target URL and options and returns a generator.
func New(target string, opts ...Option) (*Generator, error) {
	g := &Generator{target: target, method: DefaultMethod, speed: 1, maxOutstanding: DefaultMaxOutstanding, timeout: DefaultTimeout}
	for _, o := range opts {
		o(g)
	}
	var errs []error
	if u, err := url.Parse(target); err != nil {
		errs = append(errs, fmt.Errorf("target: %w", err))
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("target: %q must be an absolute http(s) URL", target))
	}
	if g.method == "" {
		errs = append(errs, errors.New("method: must not be empty"))
	}
	if !(g.speed > 0) {
		errs = append(errs, fmt.Errorf("speed: %v must be positive", g.speed))
	}
	if g.maxOutstanding < 1 {
		errs = append(errs, fmt.Errorf("maxOutstanding: %d must be at least 1", g.maxOutstanding))
	}
	if g.timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: %s must be positive", g.timeout))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	if g.client == nil {
		g.client = NewHTTPClient(g.maxOutstanding)
	}
	return g, nil
}

// NewHTTPClient returns a client tuned for many concurrent requests to one
// (usually loopback) host: keep-alive with up to maxConns idle connections
// per host, no proxy, no compression, bounded dial time.
func NewHTTPClient(maxConns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}}
}

// Run replays s: each arrival is sent at start + offset/speed regardless of
// earlier requests. It returns when every sent request has finished. If ctx
// is cancelled, dispatch stops, in-flight requests are cancelled and Run
// returns the partial report (Interrupted) with ctx's error.
func (g *Generator) Run(ctx context.Context, s Schedule) (Report, error) {
	if err := s.Validate(); err != nil {
		return Report{}, fmt.Errorf("loadgen: %w", err)
	}
	r := &run{g: g, ctx: ctx, rec: recorder{errors: map[string]int64{}}}
	r.start = time.Now()
	stopRate := func() {}
	if g.metrics != nil {
		stopRate = r.trackTargetRate(s)
	}
	interrupted := r.dispatch(s.Arrivals)
	r.wg.Wait()
	stopRate()

	end := r.start.Add(g.scaled(s.Length))
	if interrupted {
		end = time.Now()
	} else if r.rec.lastDone.After(end) {
		end = r.rec.lastDone
	}
	rep := Report{
		Target:      g.target,
		Speed:       g.speed,
		Scheduled:   int64(len(s.Arrivals)),
		Sent:        r.sent,
		Dropped:     r.dropped,
		Completed:   r.rec.completed,
		Failed:      r.rec.failed,
		Errors:      r.rec.errors,
		Duration:    end.Sub(r.start),
		TargetRate:  float64(len(s.Arrivals)) / g.scaled(s.Length).Seconds(),
		Latency:     r.rec.latency.Quantiles(),
		Lateness:    r.rec.lateness.Quantiles(),
		Interrupted: interrupted,
	}
	if rep.Duration > 0 {
		rep.AchievedRate = float64(rep.Completed) / rep.Duration.Seconds()
	}
	if interrupted {
		return rep, ctx.Err()
	}
	return rep, nil
}

func (g *Generator) scaled(d time.Duration) time.Duration {
	if g.speed == 1 {
		return d
	}
	return time.Duration(float64(d) / g.speed)
}

// run is the state of one Run.
type run struct {
	g     *Generator
	ctx   context.Context
	start time.Time
	wg    sync.WaitGroup

	outstanding   atomic.Int64
	sent, dropped int64 // dispatcher goroutine only
	rec           recorder
}

// dispatch sleeps until each arrival is due and fires every due arrival; it
// reports whether ctx was cancelled before the schedule ended.
func (r *run) dispatch(arr []time.Duration) (interrupted bool) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for i := 0; i < len(arr); {
		if wait := r.g.scaled(arr[i]) - time.Since(r.start); wait > 0 {
			timer.Reset(wait)
			select {
			case <-r.ctx.Done():
				return true
			case <-timer.C:
			}
		} else if r.ctx.Err() != nil {
			return true
		}
		now := time.Since(r.start)
		for ; i < len(arr); i++ {
			due := r.g.scaled(arr[i])
			if due > now {
				break
			}
			r.fire(r.start.Add(due))
		}
	}
	return false
}

func (r *run) fire(intended time.Time) {
	m := r.g.metrics
	if r.outstanding.Load() >= int64(r.g.maxOutstanding) {
		r.dropped++
		if m != nil {
			m.dropped.Inc()
		}
		return
	}
	r.outstanding.Add(1)
	r.sent++
	if m != nil {
		m.sent.Inc()
		m.inFlight.Inc()
	}
	r.wg.Go(func() {
		r.send(intended)
		r.outstanding.Add(-1)
		if m != nil {
			m.inFlight.Dec()
		}
	})
}

// send performs one request and records its outcome.
func (r *run) send(intended time.Time) {
	sendAt := time.Now()
	ctx, cancel := context.WithTimeout(r.ctx, r.g.timeout)
	defer cancel()
	status, err := r.do(ctx)
	done := time.Now()
	kind := classify(r.ctx, status, err)
	r.rec.record(sendAt.Sub(intended), done.Sub(intended), done, kind)
	if m := r.g.metrics; m != nil {
		if kind == "" {
			m.completed.Inc()
			m.latency.Observe(done.Sub(intended).Seconds())
		} else {
			m.failed.WithLabelValues(kind).Inc()
		}
	}
}

func (r *run) do(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, r.g.method, r.g.target, nil)
	if err != nil {
		return 0, err
	}
	resp, err := r.g.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Drain the body so that the connection is reused.
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return resp.StatusCode, fmt.Errorf("read response body: %w", err)
	}
	return resp.StatusCode, nil
}

// classify returns "" for success or the error kind of a request.
func classify(runCtx context.Context, status int, err error) string {
	var nerr net.Error
	switch {
	case err == nil && status >= 200 && status < 300:
		return ""
	case err == nil:
		return fmt.Sprintf("http_%d", status)
	case runCtx.Err() != nil:
		return ErrCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrConnection
	case errors.As(err, new(*net.OpError)):
		return ErrConnection
	default:
		return ErrOther
	}
}

// recorder accumulates outcomes from concurrent senders.
type recorder struct {
	mu                sync.Mutex
	latency, lateness Histogram
	completed, failed int64
	errors            map[string]int64
	lastDone          time.Time
}

func (c *recorder) record(lateness, latency time.Duration, done time.Time, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lateness.Record(lateness)
	if kind == "" {
		c.completed++
		c.latency.Record(latency)
	} else {
		c.failed++
		c.errors[kind]++
	}
	if done.After(c.lastDone) {
		c.lastDone = done
	}
}

// trackTargetRate updates the target-rate gauge every second with the
// arrivals scheduled in the coming second of replay time; the returned
// function stops it and resets the gauge.
func (r *run) trackTargetRate(s Schedule) (stop func()) {
	arr := s.Arrivals
	count := func(from, to time.Duration) int {
		i, _ := slices.BinarySearch(arr, from)
		j, _ := slices.BinarySearch(arr, to)
		return j - i
	}
	update := func() {
		now := time.Duration(float64(time.Since(r.start)) * r.g.speed)
		window := time.Duration(float64(time.Second) * r.g.speed)
		r.g.metrics.targetRate.Set(float64(count(now, now+window)))
	}
	update()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				update()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		r.g.metrics.targetRate.Set(0)
	}
}
