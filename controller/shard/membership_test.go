package shard_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/aware-autoscaler/aware/controller/shard"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const step = 4 * time.Second // default lease: 2 s, renewed every 500 ms, skew 500 ms

func newClient(t *testing.T, funcs *interceptor.Funcs) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, coordinationv1.AddToScheme(s))
	b := fake.NewClientBuilder().WithScheme(s)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

func member(t *testing.T, c client.Client, clk *clock, id string) *shard.Membership {
	t.Helper()
	m, err := shard.New(c, "aware-system", id, step, shard.WithClock(clk.Now))
	require.NoError(t, err)
	return m
}

// round is the start of the round in progress.
func round(clk *clock) time.Time { return clk.Now().Truncate(step) }

// owners maps each key to the members that own it in the round.
func owners(t *testing.T, ms []*shard.Membership, ks []string, r time.Time) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, k := range ks {
		for _, m := range ms {
			own, err := m.Owns(t.Context(), k, r)
			require.NoError(t, err)
			if own {
				out[k] = append(out[k], m.Identity())
			}
		}
	}
	return out
}

// run advances the clock to the next round's start plus 100 ms, renewing
// the given members every 500 ms on the way.
func run(t *testing.T, clk *clock, renewing ...*shard.Membership) {
	t.Helper()
	next := round(clk).Add(step + 100*time.Millisecond)
	for clk.Now().Before(next) {
		clk.advance(min(500*time.Millisecond, next.Sub(clk.Now())))
		for _, m := range renewing {
			require.NoError(t, m.Renew(t.Context()))
		}
	}
}

func TestMembershipShares(t *testing.T) {
	clk := &clock{t: time.Date(2026, 5, 6, 7, 8, 0, 0, time.UTC)}
	c := newClient(t, nil)
	ms := []*shard.Membership{member(t, c, clk, "aware-a"), member(t, c, clk, "aware-b"), member(t, c, clk, "aware-c")}
	for _, m := range ms {
		require.NoError(t, m.Acquire(t.Context()))
	}
	ks := keys(600)
	// Before the join delay has passed nobody drives.
	assert.Empty(t, owners(t, ms, ks, round(clk)))
	run(t, clk, ms...)
	got := owners(t, ms, ks, round(clk))
	count := map[string]int{}
	for _, k := range ks {
		require.Len(t, got[k], 1, "key %s", k)
		count[got[k][0]]++
	}
	for _, m := range ms {
		assert.InDelta(t, 200, count[m.Identity()], 60, "%s owns %d of 600", m.Identity(), count[m.Identity()])
	}

	t.Run("a member that stops renewing is taken over once its lease lapsed", func(t *testing.T) {
		before := got
		// b dies: the others renew, it does not. Its lease (2 s) lapses
		// within the round; the next round is taken over.
		run(t, clk, ms[0], ms[2])
		now := owners(t, []*shard.Membership{ms[0], ms[2]}, ks, round(clk))
		for _, k := range ks {
			require.Len(t, now[k], 1, "key %s", k)
			if before[k][0] != "aware-b" {
				assert.Equal(t, before[k], now[k], "key %s moved though its owner lives", k)
			}
		}
	})
	t.Run("a departed member's lease is collected", func(t *testing.T) {
		for range 6 {
			run(t, clk, ms[0], ms[2])
		}
		ms[0].Collect(t.Context())
		var l coordinationv1.LeaseList
		require.NoError(t, c.List(t.Context(), &l))
		var names []string
		for _, le := range l.Items {
			names = append(names, le.Name)
		}
		assert.ElementsMatch(t, []string{"aware-a", "aware-c"}, names)
	})
	t.Run("a released member hands over at the next round", func(t *testing.T) {
		ms[2].Release()
		for _, k := range ks[:50] {
			own, err := ms[2].Owns(t.Context(), k, round(clk))
			require.NoError(t, err)
			assert.False(t, own, "a released member owns nothing")
		}
		run(t, clk, ms[0])
		now := owners(t, ms[:1], ks, round(clk))
		for _, k := range ks {
			assert.Equal(t, []string{"aware-a"}, now[k])
		}
	})
}

func TestMembershipIdentityInUse(t *testing.T) {
	clk := &clock{t: time.Date(2026, 5, 6, 7, 8, 0, 0, time.UTC)}
	c := newClient(t, nil)
	a := member(t, c, clk, "aware-a")
	require.NoError(t, a.Acquire(t.Context()))
	twin := member(t, c, clk, "aware-a")
	err := twin.Acquire(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "held by a live replica")
	// Once the first lapsed (it died), a replica of the same identity
	// takes the Lease over and joins afresh.
	clk.advance(3 * time.Second)
	require.NoError(t, twin.Acquire(t.Context()))
	own, err := twin.Owns(t.Context(), "k", round(clk))
	require.NoError(t, err)
	assert.False(t, own, "joined again: waits the join delay")
	run(t, clk, twin)
	run(t, clk, twin)
	own, err = twin.Owns(t.Context(), "k", round(clk))
	require.NoError(t, err)
	assert.True(t, own)
}

func TestMembershipLeaseDeleted(t *testing.T) {
	clk := &clock{t: time.Date(2026, 5, 6, 7, 8, 0, 0, time.UTC)}
	c := newClient(t, nil)
	a := member(t, c, clk, "aware-a")
	require.NoError(t, a.Acquire(t.Context()))
	run(t, clk, a)
	own, err := a.Owns(t.Context(), "k", round(clk))
	require.NoError(t, err)
	require.True(t, own)
	var l coordinationv1.Lease
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: "aware-system", Name: "aware-a"}, &l))
	require.NoError(t, c.Delete(t.Context(), &l))
	require.NoError(t, a.Renew(t.Context()), "the lease is created again")
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: "aware-system", Name: "aware-a"}, &l))
	clk.advance(step)
	own, err = a.Owns(t.Context(), "k", round(clk))
	require.NoError(t, err)
	assert.False(t, own, "joined again: waits the join delay")
}

func TestMembershipListFails(t *testing.T) {
	clk := &clock{t: time.Date(2026, 5, 6, 7, 8, 0, 0, time.UTC)}
	var failing bool
	var mu sync.Mutex
	c := newClient(t, &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return errors.New("connection refused")
		}
		return c.List(ctx, l, opts...)
	}})
	a := member(t, c, clk, "aware-a")
	require.NoError(t, a.Acquire(t.Context()))
	run(t, clk, a)
	mu.Lock()
	failing = true
	mu.Unlock()
	run(t, clk, a)
	own, err := a.Owns(t.Context(), "k", round(clk))
	require.ErrorContains(t, err, "connection refused")
	assert.False(t, own, "without a listing of this round the replica owns nothing")
	mu.Lock()
	failing = false
	mu.Unlock()
	for range 2 {
		clk.advance(500 * time.Millisecond)
		require.NoError(t, a.Renew(t.Context()))
	}
	own, err = a.Owns(t.Context(), "k", round(clk))
	require.NoError(t, err)
	assert.True(t, own, "the listing is retried after a second")
}

func TestNewRefuses(t *testing.T) {
	c := newClient(t, nil)
	for _, tc := range []struct {
		ns, id string
		step   time.Duration
		opts   []shard.Option
		want   string
	}{
		{"", "a", step, nil, "a namespace for the Leases is required"},
		{"ns", "Aware_A", step, nil, `identity "Aware_A"`},
		{"ns", "a", 0, nil, "step 0s: must be positive"},
		{"ns", "a", step, []shard.Option{shard.WithLeaseDuration(1500 * time.Millisecond)}, "must be whole seconds"},
		{"ns", "a", step, []shard.Option{shard.WithTiming(shard.Timing{Join: time.Second, Skew: time.Second})}, "clock skew 1s"},
		{"ns", "a", step, []shard.Option{shard.WithRenewInterval(2 * time.Second)}, "renew interval 2s"},
		{"ns", "a", step, []shard.Option{shard.WithGroup("no spaces")}, `group "no spaces"`},
	} {
		_, err := shard.New(c, tc.ns, tc.id, tc.step, tc.opts...)
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}
