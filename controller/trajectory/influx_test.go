package trajectory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/infra/influxdb"
)

// shared is one influxd for the package's tests that do not stop it.
var shared struct {
	once  sync.Once
	dir   string
	local *influxdb.Local
	err   error
}

func TestMain(m *testing.M) {
	if os.Getenv(killChildEnv) != "" {
		os.Exit(killChild())
	}
	code := m.Run()
	if shared.local != nil {
		if err := shared.local.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// skipWithoutInflux skips the test if err says influxd is missing, unless
// CI=true.
func skipWithoutInflux(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, influxdb.ErrNoBinary) {
		clustertest.Missing(t, "%v (apt-get install influxdb)", err)
	}
}

// sharedInflux returns the package's influxd, started on first use.
func sharedInflux(t testing.TB) *influxdb.Local {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "trajectory-influx-")
		if shared.err == nil {
			shared.local, shared.err = influxdb.Start(context.Background(), shared.dir)
		}
	})
	skipWithoutInflux(t, shared.err)
	require.NoError(t, shared.err)
	return shared.local
}

// ownInflux starts an influxd for one test (which may stop and restart it).
func ownInflux(t *testing.T) *influxdb.Local {
	t.Helper()
	l, err := influxdb.Start(t.Context(), t.TempDir())
	skipWithoutInflux(t, err)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Stop() })
	return l
}

var dbSeq atomic.Int64

// freshDB returns a database name used by no other test.
func freshDB() string { return fmt.Sprintf("traj_test_%d_%d", os.Getpid(), dbSeq.Add(1)) }

func openInflux(t *testing.T, base, spool string, opts ...trajectory.Option) *trajectory.InfluxStore {
	t.Helper()
	s, err := trajectory.OpenInflux(t.Context(), base, spool, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestInfluxContract(t *testing.T) {
	l := sharedInflux(t)
	runContract(t, func(t *testing.T) trajectory.Store {
		return openInflux(t, l.URL(), t.TempDir(), trajectory.WithDatabase(freshDB()),
			trajectory.WithFlushInterval(50*time.Millisecond))
	})
}

func TestInfluxContractRetentionPolicy(t *testing.T) {
	l := sharedInflux(t)
	runContract(t, func(t *testing.T) trajectory.Store {
		return openInflux(t, l.URL(), t.TempDir(), trajectory.WithDatabase(freshDB()),
			trajectory.WithRetentionPolicy("traj", 100000*time.Hour))
	})
}

// countingTransport counts write requests.
type countingTransport struct {
	writes atomic.Int64
	steps  atomic.Int64 // steps points written
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/write" {
		c.writes.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		c.steps.Add(int64(strings.Count(string(body), "steps,app=")))
		r.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestInfluxBatching(t *testing.T) {
	l := sharedInflux(t)
	ct := &countingTransport{}
	s := openInflux(t, l.URL(), t.TempDir(), trajectory.WithDatabase(freshDB()), trajectory.WithBatchSize(500),
		trajectory.WithFlushInterval(time.Hour), trajectory.WithHTTPClient(&http.Client{Transport: ct}))
	ctx := t.Context()
	gens := []*gen{newGen("ns/b0", t0), newGen("ns/b1", t0), newGen("ns/b2", t0), newGen("ns/b3", t0)}
	for ep := range int64(5) {
		for _, g := range gens {
			for _, st := range g.episode(ep, rewards(100, float64(ep)), true) {
				require.NoError(t, s.Append(ctx, st)) // one step per call
			}
		}
	}
	require.NoError(t, s.Flush(ctx))
	assert.EqualValues(t, 2000, ct.steps.Load())
	assert.EqualValues(t, 4, ct.writes.Load(), "2000 steps in batches of 500")
	t.Logf("2000 single-step Appends became %d write requests", ct.writes.Load())
	for _, g := range gens {
		recent, err := s.RecentEpisodes(ctx, g.app, 10)
		require.NoError(t, err)
		assert.Equal(t, []int64{0, 1, 2, 3, 4}, episodeNumbers(recent))
	}
	st := s.Status()
	assert.Zero(t, st.Buffered)
	assert.Zero(t, st.Spooled)
	assert.False(t, st.Unreachable)
}

func TestInfluxBatchingByInterval(t *testing.T) {
	l := sharedInflux(t)
	ct := &countingTransport{}
	s := openInflux(t, l.URL(), t.TempDir(), trajectory.WithDatabase(freshDB()), trajectory.WithBatchSize(10000),
		trajectory.WithFlushInterval(100*time.Millisecond), trajectory.WithHTTPClient(&http.Client{Transport: ct}))
	g := newGen("ns/interval", t0)
	appendAll(t, s, g.episode(1, rewards(30, 3), true))
	require.Eventually(t, func() bool { return ct.steps.Load() == 30 }, 10*time.Second, 20*time.Millisecond,
		"the flusher sends a part batch after the interval, without Flush")
	assert.EqualValues(t, 1, ct.writes.Load())
}

// gatedTransport holds every write request until open is closed, and says
// on entered when the first one arrives.
type gatedTransport struct {
	countingTransport
	open    chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (g *gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/write" {
		g.once.Do(func() { close(g.entered) })
		<-g.open
	}
	return g.countingTransport.RoundTrip(r)
}

// TestInfluxFlushGroupCommit: Flush calls queued while a round is being
// sent share the next forced round, instead of one round (and one write)
// each. This is what MPAs ending their episodes in the same controller
// round do: each reads its recent episodes, and a read flushes first.
func TestInfluxFlushGroupCommit(t *testing.T) {
	l := sharedInflux(t)
	gt := &gatedTransport{open: make(chan struct{}), entered: make(chan struct{})}
	s := openInflux(t, l.URL(), t.TempDir(), trajectory.WithDatabase(freshDB()), trajectory.WithBatchSize(1000),
		trajectory.WithFlushInterval(time.Hour), trajectory.WithHTTPClient(&http.Client{Transport: gt}))
	ctx := t.Context()
	forced0 := s.ForcedRounds()

	first := newGen("ns/first", t0)
	appendAll(t, s, first.episode(0, rewards(4, 1), true))
	firstDone := make(chan error, 1)
	go func() { firstDone <- s.Flush(ctx) }()
	<-gt.entered // the first round is sending, held by the transport

	const callers = 20
	gens := make([]*gen, callers)
	errs := make(chan error, callers)
	for i := range gens {
		gens[i] = newGen(fmt.Sprintf("ns/group%d", i), t0)
		appendAll(t, s, gens[i].episode(0, rewards(4, float64(i)), true))
		go func() { errs <- s.Flush(ctx) }()
	}
	require.Eventually(t, func() bool { return s.QueuedFlushes() == callers }, 20*time.Second, 5*time.Millisecond)
	close(gt.open)

	require.NoError(t, <-firstDone)
	for range callers {
		require.NoError(t, <-errs)
	}
	assert.EqualValues(t, 2, s.ForcedRounds()-forced0, "the first Flush's round, then one for the %d queued", callers)
	assert.EqualValues(t, 2, gt.writes.Load())
	assert.EqualValues(t, 4*(callers+1), gt.steps.Load())
	for i, g := range gens {
		recent, err := s.RecentEpisodes(ctx, g.app, 5)
		require.NoError(t, err)
		require.Len(t, recent, 1, g.app)
		assert.InDelta(t, float64(i), recent[0].Reward, 1e-9, g.app)
	}
}

// TestInfluxOutage takes InfluxDB away: steps go to the spool, survive a
// reopen of the store while InfluxDB is still down, and reach InfluxDB
// when it comes back on the same port.
func TestInfluxOutage(t *testing.T) {
	l := ownInflux(t)
	ctx := t.Context()
	spool := t.TempDir()
	db := freshDB()
	log, logs := testLogger()
	opts := []trajectory.Option{trajectory.WithDatabase(db), trajectory.WithLogger(log),
		trajectory.WithFlushInterval(50 * time.Millisecond), trajectory.WithRetryBackoff(50*time.Millisecond, 200*time.Millisecond),
		trajectory.WithRequestTimeout(2 * time.Second)}
	s, err := trajectory.OpenInflux(ctx, l.URL(), spool, opts...)
	require.NoError(t, err)

	g, other := newGen("ns/outage", t0), newGen("ns/other", t0)
	var want []trajectory.Step
	add := func(s trajectory.Store, steps []trajectory.Step) {
		t.Helper()
		appendAll(t, s, steps)
		want = append(want, steps...)
	}
	add(s, g.episode(1, rewards(20, 5), true))
	require.NoError(t, s.Flush(ctx), "delivered while InfluxDB is up")

	require.NoError(t, l.Stop())
	add(s, g.episode(2, rewards(20, 9), true))
	add(s, g.episode(3, rewards(20, 7), true))
	appendAll(t, s, other.episode(1, rewards(5, 1), false))
	err = s.Flush(ctx)
	require.ErrorIs(t, err, trajectory.ErrSpooled)
	assert.ErrorIs(t, err, trajectory.ErrUnavailable)
	assert.ErrorContains(t, err, l.URL())
	st := s.Status()
	assert.Equal(t, 45, st.Spooled)
	assert.Zero(t, st.Buffered)
	assert.True(t, st.Unreachable)
	_, err = s.Top(ctx, "ns/outage", 3)
	require.ErrorIs(t, err, trajectory.ErrUnavailable, "reads need InfluxDB")
	assert.ErrorContains(t, err, l.URL())
	require.NoError(t, s.Close(), "closing with a spool is not an error")
	assert.NotEmpty(t, segments(t, spool, "spool-*.log"))

	// Reopen while InfluxDB is still down: the spool is replayed.
	s2, err := trajectory.OpenInflux(ctx, l.URL(), spool, opts...)
	require.NoError(t, err, "opening works without InfluxDB")
	t.Cleanup(func() { _ = s2.Close() })
	assert.Contains(t, logs.String(), "InfluxDB unreachable at open")
	assert.Equal(t, 45, s2.Status().Spooled)
	// The spool told the store where each app stands.
	err = s2.Append(ctx, g.episode(3, []float64{1}, true)...)
	assert.ErrorIs(t, err, trajectory.ErrInvalid, "episode 3 is complete (known from the spool)")
	cont := other.episode(1, []float64{1, 1}, true)
	cont[0].T, cont[1].T = 5, 6
	require.NoError(t, s2.Append(ctx, cont...), "app known from the spool continues its episode")
	// An app that only InfluxDB knows cannot continue an episode while it is down.
	unknown := newGen("ns/unknown", t0).episode(4, []float64{1}, false)
	unknown[0].T = 7
	err = s2.Append(ctx, unknown...)
	assert.ErrorIs(t, err, trajectory.ErrUnavailable)
	assert.ErrorContains(t, err, `app "ns/unknown" episode 4 step 7`)
	add(s2, g.episode(4, rewards(20, 8), true))
	require.ErrorIs(t, s2.Flush(ctx), trajectory.ErrSpooled)

	// InfluxDB comes back on the same port.
	require.NoError(t, l.Restart(ctx))
	require.NoError(t, s2.Flush(ctx))
	assert.Equal(t, trajectory.InfluxStatus{}, stripErr(s2.Status()))
	assert.Empty(t, segments(t, spool, "spool-*.log"), "delivered segments are removed")
	assert.Contains(t, logs.String(), "reachable again")

	top, err := s2.Top(ctx, "ns/outage", 10)
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 4, 3, 1}, trajNumbers(top))
	got, err := s2.Range(ctx, "ns/outage", time.Time{}, t0.Add(time.Hour))
	require.NoError(t, err)
	var steps []trajectory.Step
	for _, tr := range got {
		steps = append(steps, tr.Steps...)
	}
	assert.Equal(t, want, steps, "every step arrived, in order, exactly")
	recent, err := s2.RecentEpisodes(ctx, "ns/other", 1)
	require.NoError(t, err)
	require.Len(t, recent, 1)
	assert.Equal(t, 7, recent[0].Steps, "the episode continued across the reopen")
	assert.InDelta(t, 3, recent[0].Reward, 1e-9)

	// Also a fresh store against the same database sees it all.
	s3 := openInflux(t, l.URL(), t.TempDir(), opts...)
	apps, err := s3.Apps(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"ns/other", "ns/outage"}, apps)
}

func stripErr(s trajectory.InfluxStatus) trajectory.InfluxStatus {
	s.LastError = nil
	return s
}

// TestInfluxContinueAfterReopen reopens a store mid-episode with InfluxDB
// up: the store reads where each app stands from InfluxDB, so the episode
// continues and its summary counts every step.
func TestInfluxContinueAfterReopen(t *testing.T) {
	l := sharedInflux(t)
	ctx := t.Context()
	db, spool := freshDB(), t.TempDir()
	s, err := trajectory.OpenInflux(ctx, l.URL(), spool, trajectory.WithDatabase(db))
	require.NoError(t, err)
	g := newGen("ns/cont", t0)
	ep0 := g.episode(0, rewards(3, 3), true)
	ep := g.episode(1, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, true)
	appendAll(t, s, ep0, ep[:6])
	require.NoError(t, s.Close())

	s2 := openInflux(t, l.URL(), t.TempDir(), trajectory.WithDatabase(db))
	err = s2.Append(ctx, ep[5])
	assert.ErrorContains(t, err, "field T: 5, want 6", "InfluxDB's last step is known")
	require.NoError(t, s2.Append(ctx, ep[6:]...))
	recent, err := s2.RecentEpisodes(ctx, "ns/cont", 1)
	require.NoError(t, err)
	require.Len(t, recent, 1)
	assert.Equal(t, trajectory.Episode{App: "ns/cont", Episode: 1, Start: ep[0].Time, End: ep[9].Time, Steps: 10, Reward: 55}, recent[0])
	top, err := s2.Top(ctx, "ns/cont", 1)
	require.NoError(t, err)
	assert.Equal(t, ep, top[0].Steps)
}

// TestInfluxServerErrors puts a proxy in front of InfluxDB that answers
// 503 for a while: the store spools and, with no Flush, delivers the spool
// in the background once InfluxDB answers again.
func TestInfluxServerErrors(t *testing.T) {
	l := sharedInflux(t)
	var failing atomic.Bool
	var refused atomic.Int64
	// A buffering proxy (httputil.ReverseProxy streams request bodies, which
	// makes influxd 1.6 cut some query responses short).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() && r.URL.Path == "/write" {
			refused.Add(1)
			http.Error(w, `{"error":"overloaded"}`, http.StatusServiceUnavailable)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, l.URL()+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		maps.Copy(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	ctx := t.Context()
	spool := t.TempDir()
	s := openInflux(t, srv.URL, spool, trajectory.WithDatabase(freshDB()), trajectory.WithBatchSize(10),
		trajectory.WithFlushInterval(20*time.Millisecond), trajectory.WithRetryBackoff(20*time.Millisecond, 80*time.Millisecond))
	g := newGen("ns/5xx", t0)
	failing.Store(true)
	e1 := g.episode(1, rewards(25, 5), true)
	appendAll(t, s, e1)
	err := s.Flush(ctx)
	require.ErrorIs(t, err, trajectory.ErrSpooled)
	assert.ErrorContains(t, err, "HTTP 503")
	assert.ErrorContains(t, err, "overloaded")
	// Retries back off: a few attempts, not a storm.
	time.Sleep(300 * time.Millisecond)
	assert.Less(t, refused.Load(), int64(12))
	assert.Equal(t, 25, s.Status().Spooled)

	failing.Store(false)
	require.Eventually(t, func() bool { return s.Status().Spooled == 0 }, 10*time.Second, 20*time.Millisecond,
		"the spool is delivered in the background")
	top, err := s.Top(ctx, "ns/5xx", 1)
	require.NoError(t, err)
	require.Len(t, top, 1)
	assert.Equal(t, e1, top[0].Steps)
}

// TestInfluxRejected makes InfluxDB refuse a batch (a field type conflict,
// HTTP 400): the batch is kept in rejected.lp, reported once, and not
// retried; other batches go through.
func TestInfluxRejected(t *testing.T) {
	l := sharedInflux(t)
	ctx := t.Context()
	db, spool := freshDB(), t.TempDir()
	log, logs := testLogger()
	s := openInflux(t, l.URL(), spool, trajectory.WithDatabase(db), trajectory.WithLogger(log), trajectory.WithBatchSize(5))
	// Make "reward" a string field in the shard the steps go to.
	resp, err := http.Post(l.URL()+"/write?precision=ns&db="+db, "text/plain",
		strings.NewReader(fmt.Sprintf("steps,app=ns/poison reward=\"oops\" %d\n", t0.Add(-time.Minute).UnixNano())))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	g := newGen("ns/rej", t0)
	appendAll(t, s, g.episode(1, rewards(5, 5), true))
	err = s.Flush(ctx)
	require.ErrorIs(t, err, trajectory.ErrRejected)
	assert.NotErrorIs(t, err, trajectory.ErrSpooled)
	assert.ErrorContains(t, err, "field type conflict")
	assert.ErrorContains(t, err, `app "ns/rej" episode 1 step 0`)
	assert.NoError(t, s.Flush(ctx), "reported once")
	st := s.Status()
	assert.Equal(t, 1, st.Rejected)
	assert.Zero(t, st.Spooled)
	dead, err := os.ReadFile(filepath.Join(spool, "rejected.lp"))
	require.NoError(t, err)
	assert.Contains(t, string(dead), "# ")
	assert.Equal(t, 5, strings.Count(string(dead), "steps,app=ns/rej "))
	assert.Contains(t, logs.String(), "refused a batch")
}

func TestInfluxOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		url  string
		opts []trajectory.Option
		msg  string
	}{
		{"not a URL", "127.0.0.1:8086", nil, "want http(s)://"},
		{"query in URL", "http://127.0.0.1:8086/?db=x", nil, "want http(s)://"},
		{"zero batch", "http://127.0.0.1:1", []trajectory.Option{trajectory.WithBatchSize(0)}, "WithBatchSize(0)"},
		{"bad backoff", "http://127.0.0.1:1", []trajectory.Option{trajectory.WithRetryBackoff(time.Second, time.Millisecond)}, "WithRetryBackoff"},
		{"buffer below batch", "http://127.0.0.1:1", []trajectory.Option{trajectory.WithMaxBuffered(5)}, "WithMaxBuffered(5)"},
		{"duration without policy", "http://127.0.0.1:1", []trajectory.Option{trajectory.WithRetentionPolicy("", time.Hour)}, "needs a policy name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trajectory.OpenInflux(t.Context(), tc.url, t.TempDir(), tc.opts...)
			assert.ErrorContains(t, err, tc.msg)
		})
	}
	t.Run("spool locked", func(t *testing.T) {
		dir := t.TempDir()
		// Nothing listens on port 1: the store opens and spools.
		s := openInflux(t, "http://127.0.0.1:1", dir, trajectory.WithRequestTimeout(time.Second))
		_, err := trajectory.OpenInflux(t.Context(), "http://127.0.0.1:1", dir)
		assert.ErrorIs(t, err, trajectory.ErrLocked)
		require.NoError(t, s.Close())
	})
	t.Run("bad retention policy", func(t *testing.T) {
		l := sharedInflux(t)
		// A statement error is a configuration error, not an outage.
		_, err := trajectory.OpenInflux(t.Context(), l.URL(), t.TempDir(), trajectory.WithDatabase(freshDB()), trajectory.WithRetentionPolicy("rp", time.Minute))
		assert.ErrorContains(t, err, "retention policy duration must be at least")
	})
}

// TestInfluxBackpressure fills the buffer while InfluxDB is unreachable:
// Append never loses steps, the flusher spools them.
func TestInfluxBackpressure(t *testing.T) {
	spool := t.TempDir()
	s := openInflux(t, "http://127.0.0.1:1", spool, trajectory.WithBatchSize(10), trajectory.WithMaxBuffered(20),
		trajectory.WithFlushInterval(10*time.Millisecond), trajectory.WithRetryBackoff(time.Hour, time.Hour),
		trajectory.WithRequestTimeout(time.Second))
	g := newGen("ns/bp", t0)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for ep := range int64(10) {
		for _, st := range g.episode(ep, rewards(10, 1), true) {
			require.NoError(t, s.Append(ctx, st))
		}
	}
	err := s.Flush(ctx)
	require.ErrorIs(t, err, trajectory.ErrSpooled)
	st := s.Status()
	assert.Equal(t, 100, st.Spooled+st.Buffered)
	assert.Zero(t, st.Buffered)
}

// TestInfluxSpoolTornTail spools steps while no InfluxDB answers, damages
// the end of the spool as a crash would, and reopens the store against a
// live InfluxDB: the intact steps are delivered, the torn one is dropped
// with a warning.
func TestInfluxSpoolTornTail(t *testing.T) {
	l := sharedInflux(t)
	ctx := t.Context()
	spool, db := t.TempDir(), freshDB()
	down, err := trajectory.OpenInflux(ctx, "http://127.0.0.1:1", spool, trajectory.WithDatabase(db),
		trajectory.WithRequestTimeout(time.Second))
	require.NoError(t, err)
	g := newGen("ns/spooltorn", t0)
	e1, e2 := g.episode(1, rewards(10, 10), true), g.episode(2, rewards(10, 20), true)
	appendAll(t, down, e1)
	require.ErrorIs(t, down.Flush(ctx), trajectory.ErrSpooled)
	appendAll(t, down, e2)
	require.NoError(t, down.Close())
	segs := segments(t, spool, "spool-*.log")
	require.NotEmpty(t, segs)
	last := segs[len(segs)-1]
	st, err := os.Stat(last)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(last, st.Size()-5))

	log, logs := testLogger()
	s := openInflux(t, l.URL(), spool, trajectory.WithDatabase(db), trajectory.WithLogger(log))
	assert.Contains(t, logs.String(), "dropping a torn or corrupt tail")
	assert.Equal(t, 19, s.Status().Spooled)
	require.NoError(t, s.Flush(ctx))
	got, err := s.Range(ctx, "ns/spooltorn", time.Time{}, t0.Add(time.Hour))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, e1, got[0].Steps)
	assert.Equal(t, e2[:9], got[1].Steps)
	// The store knows where the app stands: the lost step can be appended.
	require.NoError(t, s.Append(ctx, e2[9]))
	recent, err := s.RecentEpisodes(ctx, "ns/spooltorn", 5)
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2}, episodeNumbers(recent))
}

// TestInfluxCredentials checks basic auth, from the URL or the option, and
// that a 401 at open is a configuration error that names no password.
func TestInfluxCredentials(t *testing.T) {
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		seen.Store(u + ":" + p)
		if !ok || u != "aware" || p != "s3cret" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"authorization failed"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"results":[{"statement_id":0}]}`)
	}))
	t.Cleanup(srv.Close)
	withUser := strings.Replace(srv.URL, "http://", "http://aware:s3cret@", 1)

	s, err := trajectory.OpenInflux(t.Context(), withUser, t.TempDir())
	require.NoError(t, err, "credentials from the URL")
	require.NoError(t, s.Close())
	s, err = trajectory.OpenInflux(t.Context(), srv.URL, t.TempDir(), trajectory.WithCredentials("aware", "s3cret"))
	require.NoError(t, err, "credentials from the option")
	require.NoError(t, s.Close())

	_, err = trajectory.OpenInflux(t.Context(), strings.Replace(srv.URL, "http://", "http://aware:wrong@", 1), t.TempDir())
	require.Error(t, err)
	assert.ErrorContains(t, err, "HTTP 401")
	assert.ErrorContains(t, err, "authorization failed")
	assert.NotContains(t, err.Error(), "wrong")
	assert.Equal(t, "aware:wrong", seen.Load())
}
