package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// newTestServer builds a Server with a installed (ready) unless a is nil.
func newTestServer(t *testing.T, cfg Config, a App) (*Server, *httptest.Server) {
	t.Helper()
	if cfg.App == "" {
		cfg.App = "test-app"
	}
	s, err := New(cfg, setupOf(a), WithLogger(testLogger(t)))
	require.NoError(t, err)
	if a != nil {
		s.h.setRunner(a)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

func do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func failed(s *Server, reason string) float64 {
	return testutil.ToFloat64(s.m.failed.WithLabelValues(reason))
}

func TestInvoke(t *testing.T) {
	tests := []struct {
		name          string
		method        string
		app           *fakeApp // nil: not set up
		wantStatus    int
		wantBody      string
		wantReceived  float64
		wantProcessed float64
		wantFailed    map[string]float64
		wantObserved  int
	}{
		{
			name: "post succeeds", method: http.MethodPost, app: &fakeApp{},
			wantStatus: 200, wantBody: `"checksum":42`, wantReceived: 1, wantProcessed: 1, wantObserved: 1,
		},
		{
			name: "get succeeds", method: http.MethodGet, app: &fakeApp{},
			wantStatus: 200, wantBody: `"items":1`, wantReceived: 1, wantProcessed: 1, wantObserved: 1,
		},
		{
			name: "app error is 500 and counted", method: http.MethodPost,
			app: &fakeApp{run: func(context.Context) (segments.Result, error) {
				return segments.Result{}, errBoom
			}},
			wantStatus: 500, wantBody: `"error":"boom"`, wantReceived: 1,
			wantFailed: map[string]float64{ReasonError: 1}, wantObserved: 1,
		},
		{
			name: "not set up is 503", method: http.MethodPost, app: nil,
			wantStatus: 503, wantBody: "not ready", wantReceived: 1,
			wantFailed: map[string]float64{ReasonUnavailable: 1},
		},
		{
			name: "other methods are 405 and not counted", method: http.MethodDelete, app: &fakeApp{},
			wantStatus: 405, wantBody: "use GET or POST",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a App
			if tt.app != nil {
				a = tt.app
			}
			s, ts := newTestServer(t, Config{}, a)
			status, body := do(t, tt.method, ts.URL+"/invoke")
			assert.Equal(t, tt.wantStatus, status)
			assert.Contains(t, body, tt.wantBody)
			assert.Equal(t, tt.wantReceived, testutil.ToFloat64(s.m.received))
			assert.Equal(t, tt.wantProcessed, testutil.ToFloat64(s.m.processed))
			for _, r := range failureReasons {
				assert.Equal(t, tt.wantFailed[r], failed(s, r), "failed{reason=%q}", r)
			}
			assert.Equal(t, uint64(tt.wantObserved), histCount(t, s), "duration observations")
			assert.Zero(t, testutil.ToFloat64(s.m.inFlight))
		})
	}
}

// histCount returns the number of observations in the duration histogram.
func histCount(t *testing.T, s *Server) uint64 {
	t.Helper()
	mfs, err := s.m.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "aware_workload_request_duration_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("duration histogram not gathered")
	return 0
}

func TestInvokeResponseJSON(t *testing.T) {
	_, ts := newTestServer(t, Config{App: "light"}, &fakeApp{})
	status, body := do(t, http.MethodPost, ts.URL+"/invoke")
	require.Equal(t, 200, status)
	var got InvokeResponse
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	assert.Equal(t, "light", got.App)
	require.NotNil(t, got.Result)
	assert.Equal(t, segments.Result{Items: 1, Ops: 2, Checksum: 42}, *got.Result)
	assert.Positive(t, got.DurationSeconds)
	assert.Empty(t, got.Error)
}

func TestInFlightGaugeAndLimit(t *testing.T) {
	started, release := make(chan struct{}, 8), make(chan struct{})
	a := &fakeApp{run: blockingRun(started, release)}
	s, ts := newTestServer(t, Config{MaxInFlight: 2}, a)

	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for range 2 {
		wg.Go(func() {
			status, _ := do(t, http.MethodPost, ts.URL+"/invoke")
			statuses <- status
		})
	}
	<-started
	<-started
	assert.Equal(t, 2.0, testutil.ToFloat64(s.m.inFlight))

	// A third request exceeds the limit: rejected at once, counted.
	status, body := do(t, http.MethodPost, ts.URL+"/invoke")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "overloaded")
	assert.Equal(t, 1.0, failed(s, ReasonOverload))
	assert.Equal(t, 2.0, testutil.ToFloat64(s.m.inFlight), "rejected request must not count as in flight")

	close(release)
	wg.Wait()
	close(statuses)
	for st := range statuses {
		assert.Equal(t, 200, st)
	}
	assert.Zero(t, testutil.ToFloat64(s.m.inFlight))
	assert.Equal(t, 3.0, testutil.ToFloat64(s.m.received))
	assert.Equal(t, 2.0, testutil.ToFloat64(s.m.processed))
}

func TestInvokeClientCancellation(t *testing.T) {
	started := make(chan struct{}, 1)
	sawCancel := make(chan error, 1)
	a := &fakeApp{run: func(ctx context.Context) (segments.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		sawCancel <- ctx.Err()
		return segments.Result{}, ctx.Err()
	}}
	s, ts := newTestServer(t, Config{}, a)

	errc, cancel := invokeCancellable(t, ts.URL)
	<-started
	cancel()
	require.Error(t, <-errc)
	select {
	case err := <-sawCancel:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("client cancellation did not reach the application")
	}
	require.Eventually(t, func() bool { return failed(s, ReasonCanceled) == 1 }, 5*time.Second, 5*time.Millisecond)
	assert.Zero(t, testutil.ToFloat64(s.m.processed))
	assert.Zero(t, failed(s, ReasonError))
}

func TestReadinessTransitions(t *testing.T) {
	s, ts := newTestServer(t, Config{}, nil)
	check := func(wantReady int, wantGauge float64) {
		t.Helper()
		status, _ := do(t, http.MethodGet, ts.URL+"/readyz")
		assert.Equal(t, wantReady, status)
		status, body := do(t, http.MethodGet, ts.URL+"/healthz")
		assert.Equal(t, 200, status, "healthz must stay alive")
		assert.Equal(t, "ok\n", body)
		assert.Equal(t, wantGauge, testutil.ToFloat64(s.m.ready))
	}
	check(http.StatusServiceUnavailable, 0) // setting up
	s.h.setRunner(&fakeApp{})
	check(http.StatusOK, 1)
	s.h.setReady(false) // shutting down
	check(http.StatusServiceUnavailable, 0)
}

func TestUnknownPathIs404(t *testing.T) {
	_, ts := newTestServer(t, Config{}, &fakeApp{})
	status, _ := do(t, http.MethodGet, ts.URL+"/invoke/extra")
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = do(t, http.MethodGet, ts.URL+"/")
	assert.Equal(t, http.StatusNotFound, status)
}

func TestRunGroup(t *testing.T) {
	var g runGroup
	require.True(t, g.enter())
	require.True(t, g.enter())
	done := make(chan error, 1)
	go func() { done <- g.closeAndWait(context.Background()) }()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.closed
	}, time.Second, time.Millisecond)
	assert.False(t, g.enter(), "a closed group must refuse new runs")
	g.exit()
	select {
	case <-done:
		t.Fatal("closeAndWait returned with a run still active")
	case <-time.After(20 * time.Millisecond):
	}
	g.exit()
	require.NoError(t, <-done)

	var h runGroup
	require.True(t, h.enter())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, h.closeAndWait(ctx), context.DeadlineExceeded)
}

func TestMethodNotAllowedHeader(t *testing.T) {
	_, ts := newTestServer(t, Config{}, &fakeApp{})
	req, err := http.NewRequest(http.MethodPut, ts.URL+"/invoke", strings.NewReader("x"))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "GET, POST", resp.Header.Get("Allow"))
}

func TestSampler(t *testing.T) {
	var s sampler
	t0 := time.Unix(1000, 0)
	ok, n := s.allow(t0)
	assert.True(t, ok)
	assert.Zero(t, n)
	for i := range 5 {
		ok, _ = s.allow(t0.Add(time.Duration(i) * 100 * time.Millisecond))
		assert.False(t, ok)
	}
	ok, n = s.allow(t0.Add(1500 * time.Millisecond))
	assert.True(t, ok)
	assert.Equal(t, int64(5), n, "suppressed events are reported with the next allowed one")
}

// invokeCancellable posts to base/invoke in the background; cancel makes
// the client go away, and the channel then gets the client's error.
func invokeCancellable(t *testing.T, base string) (<-chan error, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/invoke", nil)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	return errc, cancel
}
