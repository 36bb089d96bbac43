package server

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// queuedGauge and runningGauge read the server's gauges.
func queuedGauge(s *Server) float64  { return testutil.ToFloat64(s.m.queued) }
func runningGauge(s *Server) float64 { return testutil.ToFloat64(s.m.inFlight) }

// tokenRun returns a run function that signals started, then returns once
// it takes a token from release (or ctx ends), tracking how many runs are
// inside it at once in cur and the most ever in peak.
func tokenRun(started chan<- struct{}, release <-chan struct{}, cur, peak *atomic.Int64) func(context.Context) (segments.Result, error) {
	return func(ctx context.Context) (segments.Result, error) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		started <- struct{}{}
		select {
		case <-release:
			return segments.Result{Items: 1}, nil
		case <-ctx.Done():
			return segments.Result{}, ctx.Err()
		}
	}
}

func TestConcurrencyBoundsRunningRequests(t *testing.T) {
	tests := []struct {
		name        string
		concurrency int
		requests    int
		wantPeak    int
	}{
		{"two slots, five requests", 2, 5, 2},
		{"one slot, three requests", 1, 3, 1},
		{"more slots than requests", 8, 3, 3},
		{"unbounded", 0, 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := make(chan struct{}, tt.requests)
			release := make(chan struct{})
			var cur, peak atomic.Int64
			a := &fakeApp{run: tokenRun(started, release, &cur, &peak)}
			s, ts := newTestServer(t, Config{Concurrency: tt.concurrency}, a)

			statuses := make(chan int, tt.requests)
			var wg sync.WaitGroup
			for range tt.requests {
				wg.Go(func() {
					status, _ := do(t, http.MethodPost, ts.URL+"/invoke")
					statuses <- status
				})
			}
			// The first wantPeak run; the rest wait in the queue.
			for range tt.wantPeak {
				<-started
			}
			waiting := float64(tt.requests - tt.wantPeak)
			require.Eventually(t, func() bool { return queuedGauge(s) == waiting }, 10*time.Second, time.Millisecond,
				"requests beyond the slots must wait in the queue")
			select {
			case <-started:
				t.Fatal("a request ran while every slot was taken")
			default:
			}
			assert.Equal(t, float64(tt.wantPeak), runningGauge(s))

			// Each finished run lets exactly one waiting request start.
			for i := range tt.requests {
				release <- struct{}{}
				if i+tt.wantPeak < tt.requests {
					<-started
				}
			}
			wg.Wait()
			close(statuses)
			for st := range statuses {
				assert.Equal(t, http.StatusOK, st)
			}
			assert.Equal(t, int64(tt.wantPeak), peak.Load(), "most requests running at once")
			assert.Equal(t, float64(tt.requests), testutil.ToFloat64(s.m.processed), "every request completes")
			assert.Zero(t, queuedGauge(s))
			assert.Zero(t, runningGauge(s))
			assert.Zero(t, s.h.inFlight.Load())
		})
	}
}

func TestConcurrencyCancelledWaiterNeverRuns(t *testing.T) {
	tests := []struct {
		name        string
		concurrency int
	}{
		{"one slot", 1},
		{"two slots", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.concurrency
			started := make(chan struct{}, k+1)
			release := make(chan struct{})
			var cur, peak atomic.Int64
			a := &fakeApp{run: tokenRun(started, release, &cur, &peak)}
			s, ts := newTestServer(t, Config{Concurrency: k}, a)
			runs := func() int {
				a.mu.Lock()
				defer a.mu.Unlock()
				return a.runs
			}

			// k requests take every slot.
			firsts := make(chan int, k)
			for range k {
				go func() {
					status, _ := do(t, http.MethodPost, ts.URL+"/invoke")
					firsts <- status
				}()
			}
			for range k {
				<-started
			}

			// One more waits in the queue; its client goes away.
			errc, cancel := invokeCancellable(t, ts.URL)
			require.Eventually(t, func() bool { return queuedGauge(s) == 1 }, 10*time.Second, time.Millisecond)
			cancel()
			require.Error(t, <-errc)
			require.Eventually(t, func() bool { return failed(s, ReasonCanceledWaiting) == 1 }, 10*time.Second, time.Millisecond)
			assert.Zero(t, queuedGauge(s), "the cancelled request left the queue")
			assert.Equal(t, k, runs(), "the cancelled request never ran")

			// The running requests finish and free their slots; none goes
			// to the request that left, and a new request runs at once.
			for range k {
				release <- struct{}{}
				assert.Equal(t, http.StatusOK, <-firsts)
			}
			go func() { release <- struct{}{} }()
			status, _ := do(t, http.MethodPost, ts.URL+"/invoke")
			assert.Equal(t, http.StatusOK, status)
			<-started
			assert.Equal(t, k+1, runs(), "every request but the cancelled one ran")
			assert.Equal(t, float64(k+1), testutil.ToFloat64(s.m.processed))
			assert.Zero(t, failed(s, ReasonCanceled), "a request that never ran is not a cancelled run")
			assert.Equal(t, int64(k), peak.Load())
			assert.Zero(t, s.h.inFlight.Load())
		})
	}
}

// MaxInFlight counts waiting requests too: with one slot and room for two
// in the server, a third request is rejected while the second waits.
func TestMaxInFlightCountsWaitingRequests(t *testing.T) {
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	var cur, peak atomic.Int64
	a := &fakeApp{run: tokenRun(started, release, &cur, &peak)}
	s, ts := newTestServer(t, Config{Concurrency: 1, MaxInFlight: 2}, a)

	statuses := make(chan int, 2)
	go func() {
		status, _ := do(t, http.MethodPost, ts.URL+"/invoke")
		statuses <- status
	}()
	<-started
	go func() {
		status, _ := do(t, http.MethodPost, ts.URL+"/invoke")
		statuses <- status
	}()
	require.Eventually(t, func() bool { return queuedGauge(s) == 1 }, 10*time.Second, time.Millisecond)

	status, body := do(t, http.MethodPost, ts.URL+"/invoke")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "overloaded")
	assert.Equal(t, 1.0, failed(s, ReasonOverload))
	assert.Equal(t, 1.0, queuedGauge(s), "the rejected request does not wait")

	release <- struct{}{}
	<-started
	release <- struct{}{}
	assert.Equal(t, http.StatusOK, <-statuses)
	assert.Equal(t, http.StatusOK, <-statuses)
	assert.Equal(t, 2.0, testutil.ToFloat64(s.m.processed))
}

func TestSlotsFIFO(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		waiters int
		cancel  []int // waiters whose context ends while queued
		want    []int // order in which waiters get a slot
	}{
		{name: "in arrival order", n: 1, waiters: 4, want: []int{0, 1, 2, 3}},
		{name: "two slots", n: 2, waiters: 3, want: []int{0, 1, 2}},
		{name: "cancelled waiters leave", n: 1, waiters: 4, cancel: []int{0, 2}, want: []int{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSlots(tt.n)
			for range tt.n {
				require.True(t, s.tryAcquire())
			}
			assert.False(t, s.tryAcquire(), "no slot is free")

			granted := make(chan int, tt.waiters)
			errs := make([]chan error, tt.waiters)
			cancels := make([]context.CancelFunc, tt.waiters)
			for i := range tt.waiters {
				ctx, cancel := context.WithCancel(t.Context())
				cancels[i], errs[i] = cancel, make(chan error, 1)
				go func() {
					err := s.acquire(ctx)
					if err == nil {
						granted <- i
					}
					errs[i] <- err
				}()
				// Waiters queue one after the other.
				require.Eventually(t, func() bool { return s.waiting() == i+1 }, 10*time.Second, time.Millisecond)
			}
			for _, i := range tt.cancel {
				cancels[i]()
				assert.ErrorIs(t, <-errs[i], context.Canceled)
			}
			assert.Equal(t, tt.waiters-len(tt.cancel), s.waiting())

			var got []int
			for range tt.want {
				s.release()
				i := <-granted
				require.NoError(t, <-errs[i])
				got = append(got, i)
			}
			assert.Equal(t, tt.want, got)
			assert.Zero(t, s.waiting())
			for range tt.n {
				s.release()
			}
			assert.Equal(t, tt.n, s.free, "every slot is back")
		})
	}
}

func TestSlotsAcquireWithEndedContext(t *testing.T) {
	s := newSlots(1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, s.acquire(ctx), context.Canceled, "an ended context takes no slot even when one is free")
	require.NoError(t, s.acquire(t.Context()))
	assert.False(t, s.tryAcquire())
}
