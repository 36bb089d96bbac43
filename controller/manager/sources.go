package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/telemetry"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// DefaultSnapshotRounds is how many rounds' snapshots a SnapshotObserver
// keeps.
const DefaultSnapshotRounds = 4

// SnapshotObserver implements autoscaler.Observer with one telemetry
// snapshot per round: the first MPA of a round takes it (a fixed handful of
// PromQL queries for every pod), the others of the same round reuse it.
//
// It keeps the snapshots of the last few rounds, each taken at most once,
// so callers observing different rounds at the same time (the agents of
// a runner, each at its own step, some a round behind) neither query
// Prometheus again in turn nor wait behind each other's queries. A round's
// snapshot is evaluated when its first caller asks, but never later than
// the round's end plus the lateness (default: a tenth of the window, at
// most 1 s, as the agents' environment settles): a caller a round late
// still gets the window it asked for, not the newest one.
//
// A snapshot has one window's time to complete (WithSnapshotBudget): what
// it returns later is data older than a step by the time a step acts on
// it, and the next round's steps need the next snapshot anyway. So one
// slow query on a loaded Prometheus makes a slow round, not a lost one,
// until the data would be too old to act on.
type SnapshotObserver struct {
	src    telemetry.Snapshotter
	keep   int
	late   time.Duration // < 0: the default for the window
	budget time.Duration // < 0: the window
	now    func() time.Time
	met    *snapshotMetrics

	mu     sync.Mutex
	rounds map[roundKey]*roundSnapshot
}

// roundKey names a round: end is in UTC (which also drops a monotonic
// reading), so that equal instants are equal keys.
type roundKey struct {
	end    time.Time
	window time.Duration
}

// roundSnapshot is one round's snapshot, taken once; done closes when snap
// and err are set.
type roundSnapshot struct {
	done      chan struct{}
	snap      *telemetry.Snapshot
	err       error
	cancelled bool // err came from its taker's context: take it again
}

// ObserverOption configures a SnapshotObserver.
type ObserverOption func(*SnapshotObserver)

// WithSnapshotRounds keeps the snapshots of the last n rounds (default
// DefaultSnapshotRounds; at least 1).
func WithSnapshotRounds(n int) ObserverOption {
	return func(o *SnapshotObserver) { o.keep = max(n, 1) }
}

// WithLateness bounds how long after a round's end its snapshot is
// evaluated (negative: the default, a tenth of the window, at most 1 s).
func WithLateness(d time.Duration) ObserverOption { return func(o *SnapshotObserver) { o.late = d } }

// WithSnapshotBudget bounds how long taking one snapshot may last
// (negative: the default, the round's window, i.e. one step).
func WithSnapshotBudget(d time.Duration) ObserverOption {
	return func(o *SnapshotObserver) { o.budget = d }
}

// WithObserverClock replaces time.Now (tests).
func WithObserverClock(now func() time.Time) ObserverOption {
	return func(o *SnapshotObserver) { o.now = now }
}

// WithObserverMetrics registers the observer's metrics with reg:
// aware_telemetry_snapshots_total by result,
// aware_telemetry_snapshots_late_total and the
// aware_telemetry_snapshot_seconds histogram. Register one observer per
// registry.
func WithObserverMetrics(reg prometheus.Registerer) ObserverOption {
	return func(o *SnapshotObserver) { o.met = newSnapshotMetrics(reg) }
}

// NewSnapshotObserver returns an observer over src.
func NewSnapshotObserver(src telemetry.Snapshotter, opts ...ObserverOption) *SnapshotObserver {
	o := &SnapshotObserver{src: src, keep: DefaultSnapshotRounds, late: -1, budget: -1, now: time.Now, rounds: map[roundKey]*roundSnapshot{}}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// Observe implements autoscaler.Observer.
func (o *SnapshotObserver) Observe(ctx context.Context, q autoscaler.Query) (gym.Metrics, error) {
	snap, err := o.snapshot(ctx, q.At.Truncate(q.Window), q.Window)
	if err != nil {
		return gym.Metrics{}, err
	}
	obs, err := snap.AggregateStarting(podKeys(q.Namespace, q.Pods), podKeys(q.Namespace, q.Young), q.Container)
	if err != nil {
		return gym.Metrics{}, err
	}
	return obs.Metrics(len(q.Pods)), nil
}

func podKeys(namespace string, pods []string) []telemetry.PodKey {
	keys := make([]telemetry.PodKey, len(pods))
	for i, p := range pods {
		keys[i] = telemetry.PodKey{Namespace: namespace, Pod: p}
	}
	return keys
}

// snapshot returns the snapshot of the round ending at end, taking it if
// no caller has; callers of a round being taken wait for it.
func (o *SnapshotObserver) snapshot(ctx context.Context, end time.Time, window time.Duration) (*telemetry.Snapshot, error) {
	// A time.Time compares equal only with the same location: a round
	// asked for in local time (the controller's clock) and the same round
	// parsed from a reader's UTC query were two keys, and each round was
	// taken twice.
	key := roundKey{end: end.UTC(), window: window}
	for {
		o.mu.Lock()
		r, ok := o.rounds[key]
		if !ok {
			r = &roundSnapshot{done: make(chan struct{})}
			o.rounds[key] = r
			o.evict()
			o.mu.Unlock()
			o.take(ctx, key, r)
			return r.snap, r.err
		}
		o.mu.Unlock()
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !r.cancelled {
			return r.snap, r.err
		}
		// Its taker gave up; take it again, unless this caller has too.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// take evaluates r, the snapshot of round key, and publishes it.
func (o *SnapshotObserver) take(ctx context.Context, key roundKey, r *roundSnapshot) {
	late := o.late
	if late < 0 {
		late = min(key.window/10, time.Second)
	}
	now := o.now()
	at := now
	if bound := key.end.Add(late); at.After(bound) {
		at = bound
	}
	budget := o.budget
	if budget < 0 {
		budget = key.window
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, budget)
	r.snap, r.err = o.src.Snapshot(sctx, key.window, at)
	cancel()
	if r.err != nil && sctx.Err() != nil && ctx.Err() == nil {
		r.err = fmt.Errorf("telemetry snapshot of the round ending %s: not complete within its budget of %s (older data would be acted on a step late): %w",
			key.end.Format(time.RFC3339), budget, r.err)
	}
	o.met.observe(r.err, time.Since(start), now.Sub(key.end) > key.window)
	if r.err != nil && ctx.Err() != nil {
		// A cancelled caller must not poison the round for the others.
		r.cancelled = true
		o.mu.Lock()
		if o.rounds[key] == r {
			delete(o.rounds, key)
		}
		o.mu.Unlock()
	}
	close(r.done)
}

// evict drops the oldest rounds beyond the number kept; o.mu is held.
func (o *SnapshotObserver) evict() {
	for len(o.rounds) > o.keep {
		var oldest roundKey
		first := true
		for k := range o.rounds {
			if first || k.end.Before(oldest.end) {
				oldest, first = k, false
			}
		}
		delete(o.rounds, oldest)
	}
}

// snapshotMetrics are the observer's Prometheus metrics (nil: none).
type snapshotMetrics struct {
	taken   *prometheus.CounterVec
	late    prometheus.Counter
	seconds prometheus.Histogram
}

func newSnapshotMetrics(reg prometheus.Registerer) *snapshotMetrics {
	m := &snapshotMetrics{
		taken: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_telemetry_snapshots_total",
			Help: "Telemetry snapshots taken (one set of PromQL queries for every pod), by result (ok, error)."}, []string{"result"}),
		late: prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_telemetry_snapshots_late_total",
			Help: "Telemetry snapshots taken more than a window after their round ended: a caller asked for a round no longer kept (or never taken), which costs Prometheus a snapshot more."}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "aware_telemetry_snapshot_seconds",
			Help:    "Time taking one telemetry snapshot (its queries run in parallel).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)}),
	}
	reg.MustRegister(m.taken, m.late, m.seconds)
	return m
}

func (m *snapshotMetrics) observe(err error, d time.Duration, late bool) {
	if m == nil {
		return
	}
	if late {
		m.late.Inc()
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.taken.WithLabelValues(result).Inc()
	m.seconds.Observe(d.Seconds())
}

// Sources says where metrics come from and trajectories go.
type Sources struct {
	// PrometheusURL is the Prometheus HTTP API's base URL.
	PrometheusURL string
	// QueryTimeout bounds each PromQL query (0:
	// telemetry.DefaultQueryTimeout). The controller sets its step: a
	// snapshot's budget (WithSnapshotBudget) bounds its queries anyway,
	// and a shorter bound would fail a round that could still complete.
	QueryTimeout time.Duration
	// StoreDir holds the embedded trajectory store, or the InfluxDB
	// store's spool when InfluxURL is set.
	StoreDir string
	// StoreMaxBytes and StoreMaxAge bound the embedded store (0: no
	// bound; see trajectory.WithMaxBytes and WithMaxAge). InfluxDB's
	// retention is its retention policy's.
	StoreMaxBytes int64
	StoreMaxAge   time.Duration
	// InfluxURL selects the InfluxDB (v1 HTTP API) store; InfluxDB names
	// its database (default "aware").
	InfluxURL, InfluxDB string
}

// Open builds the observer (with opts) and the trajectory store; close the
// store when done.
func (s Sources) Open(ctx context.Context, log *slog.Logger, opts ...ObserverOption) (autoscaler.Observer, trajectory.Store, error) {
	if s.PrometheusURL == "" {
		return nil, nil, errors.New("controller: a Prometheus URL is required (--prometheus)")
	}
	if s.StoreDir == "" {
		return nil, nil, errors.New("controller: a trajectory store directory is required (--store-dir)")
	}
	topts := []telemetry.Option{telemetry.WithLogger(log)}
	if s.QueryTimeout != 0 {
		topts = append(topts, telemetry.WithQueryTimeout(s.QueryTimeout))
	}
	src, err := telemetry.New(s.PrometheusURL, topts...)
	if err != nil {
		return nil, nil, err
	}
	var store trajectory.Store
	if s.InfluxURL != "" {
		opts := []trajectory.Option{trajectory.WithLogger(log)}
		if s.InfluxDB != "" {
			opts = append(opts, trajectory.WithDatabase(s.InfluxDB))
		}
		store, err = trajectory.OpenInflux(ctx, s.InfluxURL, filepath.Join(s.StoreDir, "spool"), opts...)
	} else {
		store, err = trajectory.OpenFile(s.StoreDir, trajectory.WithLogger(log),
			trajectory.WithMaxBytes(s.StoreMaxBytes), trajectory.WithMaxAge(s.StoreMaxAge))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("controller: %w", err)
	}
	return NewSnapshotObserver(src, opts...), store, nil
}
