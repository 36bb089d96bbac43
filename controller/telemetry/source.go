package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/model"
)

// Snapshotter takes a snapshot of every pod's metrics: what the controller
// consumes (Source implements it; Fake scripts it).
type Snapshotter interface {
	Snapshot(ctx context.Context, window time.Duration, at time.Time) (*Snapshot, error)
}

// Defaults of New's options.
const (
	DefaultParallelism  = 4
	DefaultQueryTimeout = 10 * time.Second
)

// Option configures New.
type Option func(*settings)

type settings struct {
	client       *http.Client
	logger       *slog.Logger
	matchers     []Matcher
	maxAge       time.Duration
	required     Metric
	parallelism  int
	queryTimeout time.Duration
}

// WithHTTPClient sends the queries with c (TLS, auth, proxies); default
// http.DefaultClient's transport.
func WithHTTPClient(c *http.Client) Option { return func(s *settings) { s.client = c } }

// WithLogger logs query warnings and failures to l (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithMatchers adds label matchers to every selector, e.g. to pick one
// cluster of a shared Prometheus.
func WithMatchers(m ...Matcher) Option {
	return func(s *settings) { s.matchers = append(s.matchers, m...) }
}

// WithMaxAge sets Snapshot.MaxAge (default DefaultMaxAge): how old a pod's
// newest sample from an exporter may be. Keep it above the scrape interval.
func WithMaxAge(d time.Duration) Option { return func(s *settings) { s.maxAge = d } }

// WithRequired sets Snapshot.Required (default AllMetrics): the metrics
// Aggregate fails without, e.g. AllMetrics&^MetricOOMEvents on a cluster
// whose cAdvisor does not count OOM events.
func WithRequired(m Metric) Option { return func(s *settings) { s.required = m } }

// WithParallelism bounds the queries in flight (default 4).
func WithParallelism(n int) Option { return func(s *settings) { s.parallelism = n } }

// WithQueryTimeout bounds each query, on the client and as Prometheus'
// evaluation timeout (default 10s); a caller's context deadline that comes
// sooner bounds it too, on both sides.
func WithQueryTimeout(d time.Duration) Option { return func(s *settings) { s.queryTimeout = d } }

// Source reads snapshots from a Prometheus server's HTTP API. It is safe for
// concurrent use.
type Source struct {
	client       api.Client
	logger       *slog.Logger
	matchers     []Matcher
	maxAge       time.Duration
	required     Metric
	parallelism  int
	queryTimeout time.Duration

	mu    sync.Mutex
	stats map[string]*QueryStats
}

// New returns a Source querying the Prometheus at promURL
// (http://host:port, with any path prefix).
func New(promURL string, opts ...Option) (*Source, error) {
	s := settings{logger: slog.New(slog.DiscardHandler), maxAge: DefaultMaxAge, required: AllMetrics,
		parallelism: DefaultParallelism, queryTimeout: DefaultQueryTimeout}
	for _, o := range opts {
		o(&s)
	}
	var errs []error
	for _, m := range s.matchers {
		errs = append(errs, m.Validate())
	}
	if s.maxAge <= 0 {
		errs = append(errs, fmt.Errorf("WithMaxAge: %s must be positive", s.maxAge))
	}
	if s.required&^AllMetrics != 0 {
		errs = append(errs, fmt.Errorf("WithRequired: unknown metric bits %#x", uint32(s.required&^AllMetrics)))
	}
	if s.parallelism < 1 {
		errs = append(errs, fmt.Errorf("WithParallelism: %d must be at least 1", s.parallelism))
	}
	if s.queryTimeout <= 0 {
		errs = append(errs, fmt.Errorf("WithQueryTimeout: %s must be positive", s.queryTimeout))
	}
	if s.logger == nil {
		errs = append(errs, errors.New("WithLogger: nil logger"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	c, err := api.NewClient(api.Config{Address: promURL, Client: s.client})
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus URL %q: %w", promURL, err)
	}
	src := &Source{client: c, logger: s.logger, matchers: s.matchers, maxAge: s.maxAge,
		required: s.required, parallelism: s.parallelism, queryTimeout: s.queryTimeout, stats: map[string]*QueryStats{}}
	for _, n := range queryNames {
		src.stats[n] = &QueryStats{Name: n}
	}
	return src, nil
}

// QueryStat is one query of one snapshot.
type QueryStat struct {
	Name     string
	Query    string
	Duration time.Duration
	Series   int
}

// QueryStats accumulate one named query over a Source's life.
type QueryStats struct {
	Name           string
	Count, Errors  int64
	Total, Max     time.Duration // summed and largest latency
	Last           time.Duration
	LastSeries     int
	LastEvaluation time.Time // the evaluation time of the last query
}

// Mean is the mean latency.
func (q QueryStats) Mean() time.Duration {
	if q.Count == 0 {
		return 0
	}
	return q.Total / time.Duration(q.Count)
}

// Stats returns the per-query statistics, in the snapshot's query order.
func (s *Source) Stats() []QueryStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]QueryStats, 0, len(queryNames))
	for _, n := range queryNames {
		out = append(out, *s.stats[n])
	}
	return out
}

func (s *Source) record(name string, d time.Duration, series int, at time.Time, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats[name]
	st.Count++
	if failed {
		st.Errors++
	}
	st.Total += d
	st.Max = max(st.Max, d)
	st.Last, st.LastSeries, st.LastEvaluation = d, series, at
}

// Snapshot runs the fixed set of queries (see Queries; each grouped by
// namespace and pod, rates over window) at time at (zero: now) and returns
// every pod's metrics. A failed query fails the snapshot with a
// *QueryError naming it; missing and stale data are left for Aggregate to
// report.
func (s *Source) Snapshot(ctx context.Context, window time.Duration, at time.Time) (*Snapshot, error) {
	return s.snapshot(ctx, window, at, s.matchers)
}

func (s *Source) snapshot(ctx context.Context, window time.Duration, at time.Time, matchers []Matcher) (*Snapshot, error) {
	if err := validWindow(window); err != nil {
		return nil, err
	}
	if at.IsZero() {
		at = time.Now()
	}
	at = at.Truncate(time.Millisecond)
	start := time.Now()
	queries := buildQueries(window, matchers)
	snap := &Snapshot{At: at, Window: window, MaxAge: s.maxAge, Required: s.required,
		Pods: map[PodKey]*PodSample{}, Queries: make([]QueryStat, len(queries))}
	b := builder{snap: snap}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards b and firstErr
		firstErr error
	)
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
			cancel()
		}
	}
	sem := make(chan struct{}, s.parallelism)
	for i := range queries {
		q := &queries[i]
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			vec, st, err := s.run(ctx, q, at)
			// Apply each result as it comes, so that at most parallelism
			// decoded results are alive at once.
			mu.Lock()
			defer mu.Unlock()
			snap.Queries[i] = st
			switch {
			case err != nil:
				fail(err)
			case firstErr == nil:
				if err := b.add(q, vec); err != nil {
					fail(&QueryError{Name: q.name, Query: q.text, Err: err})
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("telemetry: snapshot: %w", err)
	}
	b.finish()
	snap.Elapsed = time.Since(start)
	return snap, nil
}

// run evaluates one query (POST /api/v1/query), recording its statistics.
func (s *Source) run(ctx context.Context, q *query, at time.Time) ([]vecSample, QueryStat, error) {
	eval := evalTimeout(ctx, s.queryTimeout)
	qctx, cancel := context.WithTimeout(ctx, s.queryTimeout)
	defer cancel()
	t0 := time.Now()
	samples, err := s.query(qctx, q.text, at, eval)
	d := time.Since(t0)
	st := QueryStat{Name: q.name, Query: q.text, Duration: d, Series: len(samples)}
	if !errors.Is(err, context.Canceled) { // cancelled: by the caller or a failed sibling
		s.record(q.name, d, len(samples), at, err != nil)
	}
	if err != nil {
		s.logger.Warn("prometheus query failed", "query", q.name, "err", err)
		return nil, st, &QueryError{Name: q.name, Query: q.text, Err: err}
	}
	return samples, st, nil
}

// evalTimeout is the evaluation timeout to ask of Prometheus: the query
// timeout d, or less when ctx ends sooner (a snapshot's budget), so that
// Prometheus stops evaluating when nobody waits for the answer any more.
// It is whole milliseconds, PromQL's resolution, and at least one.
func evalTimeout(ctx context.Context, d time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	return max(d.Truncate(time.Millisecond), time.Millisecond)
}

// maxErrorBody bounds how much of an unexpected response errors quote.
const maxErrorBody = 512

func (s *Source) query(ctx context.Context, text string, at time.Time, timeout time.Duration) ([]vecSample, error) {
	form := url.Values{
		"query":   {text},
		"time":    {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', -1, 64)},
		"timeout": {model.Duration(timeout).String()},
	}
	u := s.client.URL("/api/v1/query", nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body, err := s.client.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	r, decodeErr := decodeQueryResponse(body)
	if len(r.warnings) > 0 {
		s.logger.Warn("prometheus query warnings", "query", text, "warnings", r.warnings)
	}
	switch {
	case decodeErr == nil && r.status == "error":
		return nil, fmt.Errorf("HTTP %d: %s: %s", resp.StatusCode, r.errorType, r.errMsg)
	case resp.StatusCode/100 != 2:
		if len(body) > maxErrorBody {
			body = body[:maxErrorBody]
		}
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	case decodeErr != nil:
		return nil, decodeErr
	case r.status != "success":
		return nil, fmt.Errorf("response status %q", r.status)
	case r.resultType != "vector":
		return nil, fmt.Errorf("result is a %s, want a vector", r.resultType)
	}
	return r.samples, nil
}

// Observe is the single-application shortcut: a snapshot (now, rates over
// window) restricted to namespace and the pods matching podRegex (see
// DeploymentPodRegex), aggregated over the pods kube-state-metrics reports
// as existing (those with a readiness series; every pod with data when
// MetricReady is not required).
func (s *Source) Observe(ctx context.Context, namespace, podRegex, container string, window time.Duration) (Observation, error) {
	if namespace == "" {
		return Observation{}, errors.New("telemetry: observe: empty namespace")
	}
	if _, err := regexp.Compile("^(?:" + podRegex + ")$"); err != nil {
		return Observation{}, fmt.Errorf("telemetry: observe: pod regex %q: %w", podRegex, err)
	}
	matchers := append(append([]Matcher(nil), s.matchers...),
		Matcher{Name: "namespace", Op: "=", Value: namespace}, Matcher{Name: "pod", Op: "=~", Value: podRegex})
	snap, err := s.snapshot(ctx, window, time.Time{}, matchers)
	if err != nil {
		return Observation{}, err
	}
	var pods []PodKey
	for _, k := range snap.PodKeys() {
		if snap.Required&MetricReady == 0 || snap.Pods[k].Has&MetricReady != 0 || snap.Pods[k].Invalid&MetricReady != 0 {
			pods = append(pods, k)
		}
	}
	if len(pods) == 0 {
		return Observation{At: snap.At, Window: window}, &DataError{Err: ErrNoData, Metric: MetricReady, Container: container,
			Detail: fmt.Sprintf("no pod in namespace %q matches %q", namespace, podRegex)}
	}
	return snap.Aggregate(pods, container)
}

var _ Snapshotter = (*Source)(nil)
