package manager

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/telemetry"
)

func TestSnapshotSharing(t *testing.T) {
	const w = 15 * time.Second
	end := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	now := end.Add(300 * time.Millisecond)
	clock := WithObserverClock(func() time.Time { return now })
	ctx := context.Background()

	prom := newGate(true) // the controller's Prometheus
	ctl := NewSnapshotObserver(prom, clock)
	mux := http.NewServeMux()
	mux.Handle(SnapshotPath, ctl)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	own := newGate(true) // the runner's own Prometheus source
	reg := prometheus.NewRegistry()
	remote, err := NewRemoteSnapshots(srv.URL, own, WithRemoteMetrics(reg))
	require.NoError(t, err)
	runner := NewSnapshotObserver(remote, clock)

	q := autoscaler.Query{Namespace: "ns", Pods: []string{"a"}, Container: "app", Window: w, At: end}
	want, err := ctl.Observe(ctx, q)
	require.NoError(t, err)
	got, err := runner.Observe(ctx, q)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the runner observes what the controller observed")
	assert.Equal(t, 1, prom.count(), "one snapshot for both")
	assert.Zero(t, own.count(), "the runner did not query Prometheus")

	// A round the controller has not taken yet: it takes it for the runner.
	q.At = end.Add(w)
	now = q.At.Add(time.Second)
	_, err = runner.Observe(ctx, q)
	require.NoError(t, err)
	_, err = ctl.Observe(ctx, q)
	require.NoError(t, err)
	assert.Equal(t, 2, prom.count())
	assert.Zero(t, own.count())

	// The controller's snapshot failed: the runner reports it and does not
	// query Prometheus a second time.
	failing := NewSnapshotObserver(telemetry.NewFake(), clock)
	fsrv := httptest.NewServer(failing)
	defer fsrv.Close()
	remoteF, err := NewRemoteSnapshots(fsrv.URL, own)
	require.NoError(t, err)
	remoteF.url = fsrv.URL // the handler is mounted at the root here
	_, err = remoteF.Snapshot(ctx, w, end)
	require.ErrorIs(t, err, errControllerSnapshot)
	assert.ErrorContains(t, err, "no snapshot scripted")
	assert.Zero(t, own.count())

	// The controller is gone, or serves no snapshots: the runner queries
	// Prometheus itself.
	gone := httptest.NewServer(http.NotFoundHandler())
	remoteG, err := NewRemoteSnapshots(gone.URL, own, WithRemoteMetrics(prometheus.NewRegistry()))
	require.NoError(t, err)
	_, err = remoteG.Snapshot(ctx, w, end)
	require.NoError(t, err)
	assert.Equal(t, 1, own.count())
	gone.Close()
	_, err = remoteG.Snapshot(ctx, w, end)
	require.NoError(t, err)
	assert.Equal(t, 2, own.count())
	assert.InDelta(t, 2, testutil.ToFloat64(remoteG.fellBack), 0)
	assert.InDelta(t, 0, testutil.ToFloat64(remote.fellBack), 0)
}

func TestSnapshotHandlerRefusesBadQueries(t *testing.T) {
	end := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	o := NewSnapshotObserver(newGate(true), WithObserverClock(func() time.Time { return end.Add(time.Second) }))
	tests := []struct {
		name, method, window, at string
		code                     int
		body                     string
	}{
		{"ok", http.MethodGet, "15s", end.Format(time.RFC3339), http.StatusOK, ""},
		{"post", http.MethodPost, "15s", end.Format(time.RFC3339), http.StatusMethodNotAllowed, "only GET"},
		{"no window", http.MethodGet, "", end.Format(time.RFC3339), http.StatusBadRequest, `window ""`},
		{"negative window", http.MethodGet, "-15s", end.Format(time.RFC3339), http.StatusBadRequest, "window \"-15s\""},
		{"huge window", http.MethodGet, "1000h", end.Format(time.RFC3339), http.StatusBadRequest, "window \"1000h\""},
		{"bad time", http.MethodGet, "15s", "yesterday", http.StatusBadRequest, `at "yesterday"`},
		{"future round", http.MethodGet, "15s", end.Add(time.Minute).Format(time.RFC3339), http.StatusBadRequest, "has not begun"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := url.Values{"window": {tt.window}, "at": {tt.at}}
			rec := httptest.NewRecorder()
			o.ServeHTTP(rec, httptest.NewRequest(tt.method, SnapshotPath+"?"+v.Encode(), nil))
			assert.Equal(t, tt.code, rec.Code, rec.Body.String())
			assert.Contains(t, rec.Body.String(), tt.body)
		})
	}
}

func TestNewRemoteSnapshotsRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"", "controller:8080", "ftp://x", "http://"} {
		_, err := NewRemoteSnapshots(u, newGate(true))
		assert.ErrorContains(t, err, "want an http(s) URL", u)
	}
	_, err := NewRemoteSnapshots("http://x:8080", nil)
	assert.ErrorContains(t, err, "fallback")
}
