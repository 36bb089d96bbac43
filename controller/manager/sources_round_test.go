package manager

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/telemetry"
)

// gatedSnapshotter blocks every Snapshot call until release is closed, and
// counts the calls (a Snapshotter whose queries take a while).
type gatedSnapshotter struct {
	release chan struct{}
	mu      sync.Mutex
	calls   []telemetry.FakeCall
	started chan struct{} // receives once per call
}

func (g *gatedSnapshotter) Snapshot(ctx context.Context, window time.Duration, at time.Time) (*telemetry.Snapshot, error) {
	g.mu.Lock()
	g.calls = append(g.calls, telemetry.FakeCall{Window: window, At: at})
	g.mu.Unlock()
	g.started <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return telemetry.NewSnapshot(at, window, pod("a", 0.5, 10)), nil
}

// newGate returns a gatedSnapshotter, already released when open.
func newGate(open bool) *gatedSnapshotter {
	g := &gatedSnapshotter{release: make(chan struct{}), started: make(chan struct{}, 64)}
	if open {
		close(g.release)
	}
	return g
}

// deadlineSnapshotter records the deadline of the context it is called
// with.
type deadlineSnapshotter struct {
	deadline time.Time
	ok       bool
}

func (d *deadlineSnapshotter) Snapshot(ctx context.Context, window time.Duration, at time.Time) (*telemetry.Snapshot, error) {
	d.deadline, d.ok = ctx.Deadline()
	return telemetry.NewSnapshot(at, window, pod("a", 0.5, 10)), nil
}

func (g *gatedSnapshotter) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.calls)
}

func TestSnapshotObserverRounds(t *testing.T) {
	const w = 30 * time.Second
	end := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	query := func(at time.Time) autoscaler.Query {
		return autoscaler.Query{Namespace: "ns", Pods: []string{"a"}, Container: "app", Window: w, At: at}
	}
	ctx := context.Background()

	t.Run("callers of one round share one snapshot taken once", func(t *testing.T) {
		g := newGate(false)
		o := NewSnapshotObserver(g, WithObserverClock(func() time.Time { return end.Add(200 * time.Millisecond) }))
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() { _, errs[i] = o.Observe(ctx, query(end.Add(time.Duration(i)*time.Second))) })
		}
		<-g.started
		close(g.release)
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, g.calls, 1)
		assert.Equal(t, end.Add(200*time.Millisecond), g.calls[0].At, "a timely round is evaluated when asked")
	})

	t.Run("a round asked for in any location is one round", func(t *testing.T) {
		f := newGate(true)
		o := NewSnapshotObserver(f, WithObserverClock(func() time.Time { return end.Add(time.Second) }))
		for _, at := range []time.Time{end, end.In(time.FixedZone("CET", 3600)), end.Local(), time.Unix(0, end.UnixNano())} {
			_, err := o.Observe(ctx, query(at))
			require.NoError(t, err)
		}
		assert.Equal(t, 1, f.count(), "the controller's local clock and a reader's UTC query name the same round")
	})

	t.Run("callers alternating between rounds take each round once", func(t *testing.T) {
		f := newGate(true)
		now := end.Add(w + 100*time.Millisecond)
		o := NewSnapshotObserver(f, WithObserverClock(func() time.Time { return now }))
		for range 3 {
			for _, at := range []time.Time{end, end.Add(w), end.Add(-w)} {
				_, err := o.Observe(ctx, query(at))
				require.NoError(t, err)
			}
		}
		assert.Equal(t, 3, f.count(), "one snapshot per round, however the callers interleave")
	})

	t.Run("a late caller gets the window it asked for", func(t *testing.T) {
		f := newGate(true)
		o := NewSnapshotObserver(f, WithObserverClock(func() time.Time { return end.Add(3 * w) }))
		_, err := o.Observe(ctx, query(end))
		require.NoError(t, err)
		require.Len(t, f.calls, 1)
		assert.Equal(t, end.Add(time.Second), f.calls[0].At, "evaluated at the round's end plus the lateness (a tenth of 30 s, at most 1 s)")

		f = newGate(true)
		o = NewSnapshotObserver(f, WithLateness(5*time.Second), WithObserverClock(func() time.Time { return end.Add(3 * w) }))
		_, err = o.Observe(ctx, query(end.Add(10*time.Second)))
		require.NoError(t, err)
		assert.Equal(t, end.Add(5*time.Second), f.calls[0].At, "the round is the query's time rounded down to the window")
	})

	t.Run("only the last rounds are kept", func(t *testing.T) {
		f := newGate(true)
		o := NewSnapshotObserver(f, WithSnapshotRounds(2), WithObserverClock(func() time.Time { return end.Add(10 * w) }))
		for i := range 5 {
			_, err := o.Observe(ctx, query(end.Add(time.Duration(i)*w)))
			require.NoError(t, err)
		}
		assert.Len(t, o.rounds, 2)
		_, err := o.Observe(ctx, query(end.Add(4*w)))
		require.NoError(t, err)
		assert.Equal(t, 5, f.count(), "a kept round is not taken again")
		_, err = o.Observe(ctx, query(end))
		require.NoError(t, err)
		assert.Equal(t, 6, f.count(), "a dropped round is taken again")
		assert.Len(t, o.rounds, 2)
	})

	t.Run("a round taken more than a window after its end is counted late", func(t *testing.T) {
		f := newGate(true)
		reg := prometheus.NewRegistry()
		now := end.Add(w / 2)
		o := NewSnapshotObserver(f, WithSnapshotRounds(1), WithObserverMetrics(reg), WithObserverClock(func() time.Time { return now }))
		_, err := o.Observe(ctx, query(end))
		require.NoError(t, err)
		now = end.Add(w + w/2)
		_, err = o.Observe(ctx, query(end.Add(w)))
		require.NoError(t, err)
		assert.InDelta(t, 0, testutil.ToFloat64(o.met.late), 0, "each round taken within its next window")
		_, err = o.Observe(ctx, query(end))
		require.NoError(t, err)
		assert.Equal(t, 3, f.count(), "the dropped round is taken again")
		assert.InDelta(t, 1, testutil.ToFloat64(o.met.late), 0, "and counted late")
	})

	t.Run("a snapshot has one window's time, or its budget", func(t *testing.T) {
		for _, tc := range []struct {
			opts []ObserverOption
			want time.Duration
		}{{nil, w}, {[]ObserverOption{WithSnapshotBudget(2 * time.Second)}, 2 * time.Second}} {
			d := &deadlineSnapshotter{}
			o := NewSnapshotObserver(d, append(tc.opts, WithObserverClock(func() time.Time { return end }))...)
			before := time.Now()
			_, err := o.Observe(ctx, query(end))
			require.NoError(t, err)
			require.True(t, d.ok, "the snapshot's context has a deadline")
			assert.WithinRange(t, d.deadline, before.Add(tc.want), time.Now().Add(tc.want))
		}
	})

	t.Run("a snapshot over its budget fails its round once, naming the budget", func(t *testing.T) {
		g := newGate(false) // never released: only the budget ends it
		defer close(g.release)
		reg := prometheus.NewRegistry()
		o := NewSnapshotObserver(g, WithSnapshotBudget(time.Millisecond), WithObserverMetrics(reg),
			WithObserverClock(func() time.Time { return end }))
		_, err := o.Observe(ctx, query(end))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "not complete within its budget of 1ms")
		_, err2 := o.Observe(ctx, query(end))
		assert.Equal(t, err, err2, "the round's other steps hold on the same error")
		assert.Equal(t, 1, g.count(), "without asking a loaded Prometheus again")
		assert.InDelta(t, 1, testutil.ToFloat64(o.met.taken.WithLabelValues("error")), 0)
	})

	t.Run("a caller that gives up does not poison the round", func(t *testing.T) {
		g := newGate(false)
		reg := prometheus.NewRegistry()
		o := NewSnapshotObserver(g, WithObserverMetrics(reg), WithObserverClock(func() time.Time { return end }))
		cctx, cancel := context.WithCancel(ctx)
		first := make(chan error, 1)
		go func() {
			_, err := o.Observe(cctx, query(end))
			first <- err
		}()
		<-g.started // the first caller is taking the round
		second := make(chan error, 1)
		go func() {
			_, err := o.Observe(ctx, query(end))
			second <- err
		}()
		cancel()
		require.ErrorIs(t, <-first, context.Canceled)
		<-g.started // the second caller takes the round again
		close(g.release)
		require.NoError(t, <-second)
		assert.Len(t, g.calls, 2)
		assert.InDelta(t, 1, testutil.ToFloat64(o.met.taken.WithLabelValues("ok")), 0)
		assert.InDelta(t, 1, testutil.ToFloat64(o.met.taken.WithLabelValues("error")), 0)
	})
}
