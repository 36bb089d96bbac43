package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func okHandler(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"ok":true}`)) }

func newGen(t *testing.T, target string, opts ...Option) *Generator {
	t.Helper()
	g, err := New(target, opts...)
	require.NoError(t, err)
	return g
}

func TestRunHonoursSchedule(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(okHandler))
	defer ts.Close()
	s, err := Constant(200, time.Second)
	require.NoError(t, err)

	rep, err := newGen(t, ts.URL).Run(t.Context(), s)
	require.NoError(t, err)
	assert.Equal(t, int64(200), rep.Scheduled)
	assert.Equal(t, int64(200), rep.Sent)
	assert.Equal(t, int64(200), rep.Completed)
	assert.Zero(t, rep.Failed)
	assert.Zero(t, rep.Dropped)
	assert.Empty(t, rep.Errors)
	assert.InDelta(t, 200, rep.TargetRate, 1e-9)
	assert.InEpsilon(t, 200, rep.AchievedRate, 0.1, "achieved %.1f req/s", rep.AchievedRate)
	assert.GreaterOrEqual(t, rep.Duration, time.Second)
	assert.Less(t, rep.Duration, 1500*time.Millisecond)
	// Loose bounds: the machine is shared; the benchmark measures precision.
	assert.Less(t, rep.Lateness.P99, 200*time.Millisecond, "dispatch lateness p99")
	assert.Positive(t, rep.Latency.P50)
	assert.LessOrEqual(t, rep.Latency.P50, rep.Latency.P99)
	assert.LessOrEqual(t, rep.Latency.P99, rep.Latency.Max)
}

// TestRunIsOpenLoop: a slow server must not slow dispatch. With a 200 ms
// handler and 100 req/s for 1 s, a closed-loop client with few connections
// would need far longer; here every request reaches the server on time and
// latencies include the server's wait.
func TestRunIsOpenLoop(t *testing.T) {
	var (
		mu      sync.Mutex
		arrived []time.Time
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived = append(arrived, time.Now())
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		okHandler(w, r)
	}))
	defer ts.Close()
	s, err := Constant(100, time.Second)
	require.NoError(t, err)

	start := time.Now()
	rep, err := newGen(t, ts.URL).Run(t.Context(), s)
	require.NoError(t, err)
	require.Equal(t, int64(100), rep.Completed)
	// A closed-loop client would fall behind by up to 200 ms per request.
	assert.Less(t, rep.Lateness.P99, 150*time.Millisecond, "dispatch must not wait for responses")
	assert.GreaterOrEqual(t, rep.Latency.P50, 200*time.Millisecond, "latency includes the server's wait")
	assert.Less(t, rep.Latency.P99, 500*time.Millisecond)
	assert.Less(t, rep.Duration, 1700*time.Millisecond, "run ends about 200 ms after the last send")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, arrived, 100)
	last := arrived[0]
	for _, a := range arrived {
		if a.After(last) {
			last = a
		}
	}
	assert.Less(t, last.Sub(start), 1300*time.Millisecond, "the last request must reach the server on schedule (at 0.99 s)")
}

func TestRunErrorKinds(t *testing.T) {
	closedPort := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		return "http://" + addr
	}
	serve := func(t *testing.T, h http.HandlerFunc) string {
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		return ts.URL
	}
	tests := []struct {
		name   string
		target func(t *testing.T) string
		opts   []Option
		want   string
	}{
		{"http status", func(t *testing.T) string {
			return serve(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
		}, nil, "http_500"},
		{"503", func(t *testing.T) string {
			return serve(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) })
		}, nil, "http_503"},
		{"timeout", func(t *testing.T) string {
			return serve(t, func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-time.After(2 * time.Second):
				case <-r.Context().Done():
				}
			})
		}, []Option{WithTimeout(50 * time.Millisecond)}, ErrTimeout},
		{"connection refused", closedPort, nil, ErrConnection},
		{"connection closed by server", func(t *testing.T) string {
			return serve(t, func(w http.ResponseWriter, _ *http.Request) {
				c, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = c.Close()
				}
			})
		}, nil, ErrConnection},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Constant(50, 200*time.Millisecond)
			require.NoError(t, err)
			rep, err := newGen(t, tt.target(t), tt.opts...).Run(t.Context(), s)
			require.NoError(t, err)
			assert.Equal(t, int64(10), rep.Sent)
			assert.Equal(t, int64(10), rep.Failed)
			assert.Zero(t, rep.Completed)
			assert.Equal(t, map[string]int64{tt.want: 10}, rep.Errors)
			assert.Zero(t, rep.AchievedRate)
		})
	}
}

func TestRunDropsBeyondMaxOutstanding(t *testing.T) {
	release := make(chan struct{})
	var served atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		served.Add(1)
		okHandler(w, r)
	}))
	defer ts.Close()
	defer time.AfterFunc(500*time.Millisecond, func() { close(release) }).Stop()
	s, err := Constant(100, 200*time.Millisecond) // 20 arrivals, all due before the release
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	rep, err := newGen(t, ts.URL, WithMaxOutstanding(5), WithMetrics(m)).Run(t.Context(), s)
	require.NoError(t, err)
	assert.Equal(t, int64(5), rep.Sent)
	assert.Equal(t, int64(15), rep.Dropped, "arrivals beyond the cap are dropped, not delayed")
	assert.Equal(t, int64(5), rep.Completed)
	assert.Equal(t, int64(5), served.Load())
	assert.InEpsilon(t, 100, rep.TargetRate, 1e-9)
	assert.Equal(t, 15.0, testutil.ToFloat64(m.dropped))
	assert.Equal(t, 5.0, testutil.ToFloat64(m.sent))
}

func TestRunCancel(t *testing.T) {
	started := make(chan struct{}, 1000)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	}))
	defer ts.Close()
	s, err := Constant(100, 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for range 5 {
			<-started
		}
		cancel()
	}()
	rep, err := newGen(t, ts.URL).Run(ctx, s)
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, rep.Interrupted)
	assert.Less(t, rep.Duration, 5*time.Second)
	assert.GreaterOrEqual(t, rep.Sent, int64(5))
	assert.Less(t, rep.Sent, int64(1000))
	assert.Equal(t, rep.Sent, rep.Errors[ErrCanceled], "in-flight requests are cancelled")
}

func TestRunSpeed(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(okHandler))
	defer ts.Close()
	s, err := Constant(50, 2*time.Second) // 100 arrivals over 2 s, replayed in 0.5 s
	require.NoError(t, err)
	rep, err := newGen(t, ts.URL, WithSpeed(4)).Run(t.Context(), s)
	require.NoError(t, err)
	assert.Equal(t, int64(100), rep.Completed)
	assert.InDelta(t, 200, rep.TargetRate, 1e-9)
	assert.GreaterOrEqual(t, rep.Duration, 500*time.Millisecond)
	assert.Less(t, rep.Duration, time.Second)
	assert.InEpsilon(t, 200, rep.AchievedRate, 0.1)
}

func TestRunMetricsMatchReport(t *testing.T) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%4 == 0 {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		okHandler(w, r)
	}))
	defer ts.Close()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	s, err := Constant(100, 400*time.Millisecond)
	require.NoError(t, err)
	rep, err := newGen(t, ts.URL, WithMetrics(m)).Run(t.Context(), s)
	require.NoError(t, err)
	assert.Equal(t, int64(40), rep.Sent)
	assert.Equal(t, int64(30), rep.Completed)
	assert.Equal(t, map[string]int64{"http_500": 10}, rep.Errors)
	assert.Equal(t, 40.0, testutil.ToFloat64(m.sent))
	assert.Equal(t, 30.0, testutil.ToFloat64(m.completed))
	assert.Equal(t, 10.0, testutil.ToFloat64(m.failed.WithLabelValues("http_500")))
	assert.Zero(t, testutil.ToFloat64(m.inFlight))
	assert.Zero(t, testutil.ToFloat64(m.targetRate), "reset at the end of the run")
	count, err := testutil.GatherAndCount(reg, "aware_loadgen_request_latency_seconds")
	require.NoError(t, err)
	assert.Equal(t, 1, count)

	_, err = NewMetrics(reg)
	assert.ErrorContains(t, err, "register loadgen metrics", "registering twice must fail clearly")
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		target  string
		opts    []Option
		wantErr []string
	}{
		{"ok", "http://127.0.0.1:8080/invoke", nil, nil},
		{"relative", "/invoke", nil, []string{`target: "/invoke" must be an absolute http(s) URL`}},
		{"bad scheme", "ftp://x/", nil, []string{"must be an absolute http(s) URL"}},
		{"unparsable", "http://[::1", nil, []string{"target:"}},
		{"bad options", "http://x/", []Option{WithSpeed(0), WithMaxOutstanding(0), WithTimeout(0), WithMethod("")},
			[]string{"speed: 0 must be positive", "maxOutstanding: 0", "timeout: 0s", "method: must not be empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.target, tt.opts...)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			for _, w := range tt.wantErr {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}

func TestRunRejectsInvalidSchedule(t *testing.T) {
	g := newGen(t, "http://127.0.0.1:1/")
	_, err := g.Run(t.Context(), Schedule{Arrivals: []time.Duration{time.Second, 0}, Length: 2 * time.Second})
	assert.ErrorContains(t, err, "must be sorted")
}
