package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// startRun runs s in the background on a loopback listener and returns its
// base URL, the cancel function and the channel Run's error arrives on.
func startRun(t *testing.T, cfg Config, setup Setup, opts ...Option) (*Server, string, context.CancelFunc, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if cfg.App == "" {
		cfg.App = "test-app"
	}
	s, err := New(cfg, setup, append([]Option{WithListener(ln), WithLogger(testLogger(t))}, opts...)...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	t.Cleanup(cancel)
	return s, "http://" + ln.Addr().String(), cancel, errc
}

func waitErr(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

func TestRunLifecycle(t *testing.T) {
	a := &fakeApp{}
	releaseSetup := make(chan struct{})
	setup := func(ctx context.Context) (App, error) {
		select {
		case <-releaseSetup:
			return a, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var mu sync.Mutex
	var closed []string
	closer := func(name string) Option {
		return WithCloser(name, func() error {
			mu.Lock()
			defer mu.Unlock()
			closed = append(closed, name)
			assert.True(t, a.closed, "clients must be closed after the app is torn down")
			return nil
		})
	}
	s, url, cancel, errc := startRun(t, Config{}, setup, closer("objects"), closer("db"))

	// Alive but not ready while setting up.
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, 5*time.Second, 5*time.Millisecond)
	status, _ := do(t, http.MethodGet, url+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	status, _ = do(t, http.MethodPost, url+"/invoke")
	assert.Equal(t, http.StatusServiceUnavailable, status)

	close(releaseSetup)
	<-s.Ready()
	status, _ = do(t, http.MethodGet, url+"/readyz")
	assert.Equal(t, http.StatusOK, status)
	status, _ = do(t, http.MethodPost, url+"/invoke")
	assert.Equal(t, http.StatusOK, status)

	assert.ErrorContains(t, s.Run(t.Context()), "more than once")

	cancel()
	require.NoError(t, waitErr(t, errc))
	assert.True(t, a.closed)
	assert.Equal(t, []string{"db", "objects"}, closed, "closers run in reverse order")
	_, err := http.Get(url + "/healthz")
	assert.Error(t, err, "listener must be closed after Run")
}

func TestRunGracefulDrain(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	a := &fakeApp{run: blockingRun(started, release)}
	s, url, cancel, errc := startRun(t, Config{DrainDelay: time.Second, ShutdownTimeout: 10 * time.Second}, setupOf(a))
	<-s.Ready()

	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Post(url+"/invoke", "", nil)
		if err != nil {
			done <- result{err: err}
			return
		}
		resp.Body.Close()
		done <- result{status: resp.StatusCode}
	}()
	<-started
	cancel()

	// During the drain delay the server still answers, but is not ready.
	// Run drops readiness once it sees the cancellation, which on a busy
	// machine can come after the first probe: poll until it does, within
	// the drain delay (afterwards the listener is closed and no probe can
	// succeed).
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, time.Second, 5*time.Millisecond, "readyz answers 503 during the drain delay")
	// Then the listener closes while the request is still in flight.
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", url[len("http://"):], 100*time.Millisecond)
		if err != nil {
			return true
		}
		c.Close()
		return false
	}, 5*time.Second, 10*time.Millisecond)
	select {
	case <-errc:
		t.Fatal("Run returned before the in-flight request drained")
	default:
	}

	close(release)
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status, "the in-flight request must complete during shutdown")
	require.NoError(t, waitErr(t, errc))
	assert.Equal(t, []string{"run done", "app closed"}, a.Events(), "teardown must wait for the request")
}

func TestRunDrainTimeoutCancelsRequests(t *testing.T) {
	started := make(chan struct{}, 1)
	sawCancel := make(chan struct{})
	a := &fakeApp{run: func(ctx context.Context) (_ segments.Result, err error) {
		started <- struct{}{}
		<-ctx.Done()
		close(sawCancel)
		return segments.Result{}, ctx.Err()
	}}
	s, url, cancel, errc := startRun(t, Config{ShutdownTimeout: 100 * time.Millisecond}, setupOf(a))
	<-s.Ready()
	go func() {
		if resp, err := http.Post(url+"/invoke", "", nil); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	require.NoError(t, waitErr(t, errc))
	select {
	case <-sawCancel:
	default:
		t.Fatal("the request was not cancelled when the drain timed out")
	}
	assert.Equal(t, []string{"run done", "app closed"}, a.Events())
}

func TestRunSetupFailure(t *testing.T) {
	closedClient := false
	setup := func(context.Context) (App, error) { return nil, errBoom }
	_, _, _, errc := startRun(t, Config{App: "broken"}, setup,
		WithCloser("db", func() error { closedClient = true; return nil }))
	err := waitErr(t, errc)
	require.ErrorIs(t, err, errBoom)
	assert.Contains(t, err.Error(), "set up app broken")
	assert.True(t, closedClient, "external clients must be closed when setup fails")
}

func TestRunCancelledDuringSetup(t *testing.T) {
	setup := func(ctx context.Context) (App, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	_, _, cancel, errc := startRun(t, Config{}, setup)
	time.Sleep(20 * time.Millisecond)
	cancel()
	assert.NoError(t, waitErr(t, errc), "cancellation during setup is a clean shutdown")
}

func TestRunReportsTeardownAndCloserErrors(t *testing.T) {
	a := &failingCloseApp{}
	s, _, cancel, errc := startRun(t, Config{App: "x"}, setupOf(a),
		WithCloser("db", func() error { return errors.New("db close failed") }))
	<-s.Ready()
	cancel()
	err := waitErr(t, errc)
	require.ErrorIs(t, err, errBoom)
	assert.Contains(t, err.Error(), "teardown app x")
	assert.Contains(t, err.Error(), "close db: db close failed")
}

func TestRunListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	s, err := New(Config{App: "x", Addr: ln.Addr().String()}, setupOf(&fakeApp{}), WithLogger(testLogger(t)))
	require.NoError(t, err)
	err = s.Run(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "listen "+ln.Addr().String())
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		setup   Setup
		wantErr []string
	}{
		{"ok", Config{App: "a"}, setupOf(&fakeApp{}), nil},
		{"missing app", Config{}, setupOf(&fakeApp{}), []string{"app: must name"}},
		{"bad addr", Config{App: "a", Addr: "nohost"}, setupOf(&fakeApp{}), []string{`addr: "nohost"`}},
		{"negatives", Config{App: "a", MaxInFlight: -1, ShutdownTimeout: -1, DrainDelay: -1, GOMAXPROCS: -2, SetupTimeout: -1},
			setupOf(&fakeApp{}), []string{"maxInFlight: -1", "shutdownTimeout", "drainDelay", "gomaxprocs: -2", "setupTimeout"}},
		{"negative concurrency", Config{App: "a", Concurrency: -3}, setupOf(&fakeApp{}), []string{"concurrency: -3 must not be negative (0 is unbounded)"}},
		{"concurrency", Config{App: "a", Concurrency: 4, MaxInFlight: 2}, setupOf(&fakeApp{}), nil},
		{"nil setup", Config{App: "a"}, nil, []string{"setup must not be nil"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, tt.setup)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.wantErr {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

type failingCloseApp struct{ fakeApp }

func (f *failingCloseApp) Close(context.Context) error { return errBoom }
