package manager

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aware-autoscaler/aware/controller/telemetry"
)

// SnapshotPath is where a controller serves its observer's snapshots, on
// its metrics address: GET SnapshotPath?window=15s&at=<RFC 3339 time>
// answers with the gob-encoded telemetry.Snapshot of the round at falls in
// (taken once for the controller and every reader alike).
const SnapshotPath = "/telemetry/snapshot"

// maxSnapshotWindow bounds the window a reader may ask for.
const maxSnapshotWindow = time.Hour

// ServeHTTP serves the snapshot of the round the query's at falls in, so
// that an agent runner observes from the snapshot this controller takes
// instead of querying Prometheus again: 400 for a malformed query or a
// round that has not begun, 502 when the snapshot failed (the body says
// why).
func (o *SnapshotObserver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "snapshot: only GET", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	window, err := time.ParseDuration(q.Get("window"))
	if err != nil || window <= 0 || window > maxSnapshotWindow || window%time.Millisecond != 0 {
		http.Error(w, fmt.Sprintf("snapshot: window %q: want a duration of whole milliseconds in (0, %s], e.g. 15s", q.Get("window"), maxSnapshotWindow), http.StatusBadRequest)
		return
	}
	at, err := time.Parse(time.RFC3339Nano, q.Get("at"))
	if err != nil {
		http.Error(w, fmt.Sprintf("snapshot: at %q: want an RFC 3339 time", q.Get("at")), http.StatusBadRequest)
		return
	}
	end := at.Truncate(window)
	if now := o.now(); end.After(now) {
		http.Error(w, fmt.Sprintf("snapshot: the round ending %s has not begun (now %s)", end.Format(time.RFC3339), now.Format(time.RFC3339)), http.StatusBadRequest)
		return
	}
	snap, err := o.snapshot(r.Context(), end, window)
	if err != nil {
		http.Error(w, "snapshot: "+err.Error(), http.StatusBadGateway)
		return
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(snap); err != nil {
		http.Error(w, "snapshot: encoding: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-gob")
	_, _ = w.Write(buf.Bytes())
}

// RemoteSnapshots is a telemetry.Snapshotter that reads the snapshots a
// controller serves at SnapshotPath. When the controller cannot be reached
// or does not serve them (an older controller, a restart), it takes the
// snapshot from its fallback source itself; when the controller's own
// snapshot failed, it returns that error instead of querying Prometheus a
// second time.
type RemoteSnapshots struct {
	url      string
	hc       *http.Client
	fallback telemetry.Snapshotter
	log      *slog.Logger
	fellBack prometheus.Counter
}

// RemoteOption configures RemoteSnapshots.
type RemoteOption func(*RemoteSnapshots)

// WithRemoteClient sets the HTTP client (default: one with a 30 s timeout).
func WithRemoteClient(hc *http.Client) RemoteOption { return func(r *RemoteSnapshots) { r.hc = hc } }

// WithRemoteLogger logs each fall-back.
func WithRemoteLogger(l *slog.Logger) RemoteOption { return func(r *RemoteSnapshots) { r.log = l } }

// WithRemoteMetrics registers aware_telemetry_snapshot_fallbacks_total
// with reg.
func WithRemoteMetrics(reg prometheus.Registerer) RemoteOption {
	return func(r *RemoteSnapshots) {
		r.fellBack = prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_telemetry_snapshot_fallbacks_total",
			Help: "Snapshots taken from Prometheus because the controller did not serve them."})
		reg.MustRegister(r.fellBack)
	}
}

// CheckSnapshotsURL checks that base can be the controller's metrics
// address: an http(s) URL with a host.
func CheckSnapshotsURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want an http(s) URL of the controller's metrics address, e.g. http://aware-controller:8080", base)
	}
	return nil
}

// NewRemoteSnapshots reads snapshots from the controller at base (its
// metrics address, e.g. http://aware-controller:8080), falling back to
// fallback.
func NewRemoteSnapshots(base string, fallback telemetry.Snapshotter, opts ...RemoteOption) (*RemoteSnapshots, error) {
	if err := CheckSnapshotsURL(base); err != nil {
		return nil, fmt.Errorf("controller snapshots %w", err)
	}
	if fallback == nil {
		return nil, errors.New("controller snapshots: a fallback source is required")
	}
	r := &RemoteSnapshots{url: strings.TrimSuffix(base, "/") + SnapshotPath, hc: &http.Client{Timeout: 30 * time.Second},
		fallback: fallback, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(r)
	}
	return r, nil
}

// errControllerSnapshot is a snapshot the controller took and failed.
var errControllerSnapshot = errors.New("the controller's snapshot failed")

// Snapshot implements telemetry.Snapshotter.
func (r *RemoteSnapshots) Snapshot(ctx context.Context, window time.Duration, at time.Time) (*telemetry.Snapshot, error) {
	snap, err := r.fetch(ctx, window, at)
	if err == nil || errors.Is(err, errControllerSnapshot) || ctx.Err() != nil {
		return snap, err
	}
	r.log.Warn("controller snapshot unavailable; querying Prometheus", "url", r.url, "err", err)
	if r.fellBack != nil {
		r.fellBack.Inc()
	}
	return r.fallback.Snapshot(ctx, window, at)
}

func (r *RemoteSnapshots) fetch(ctx context.Context, window time.Duration, at time.Time) (*telemetry.Snapshot, error) {
	q := url.Values{"window": {window.String()}, "at": {at.UTC().Format(time.RFC3339Nano)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		err := fmt.Errorf("%s: %s: %s", r.url, resp.Status, strings.TrimSpace(string(msg)))
		if resp.StatusCode == http.StatusBadGateway {
			return nil, fmt.Errorf("%w: %w", errControllerSnapshot, err)
		}
		return nil, err
	}
	var snap telemetry.Snapshot
	if err := gob.NewDecoder(resp.Body).Decode(&snap); err != nil {
		return nil, fmt.Errorf("%s: decoding the snapshot: %w", r.url, err)
	}
	if snap.Pods == nil {
		snap.Pods = map[telemetry.PodKey]*telemetry.PodSample{}
	}
	return &snap, nil
}
