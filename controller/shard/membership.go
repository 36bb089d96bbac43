package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GroupLabel marks the Leases of one group of replicas sharing MPAs.
const GroupLabel = "aware.dev/shard-group"

// DefaultGroup is the group of `aware controller --shard`.
const DefaultGroup = "aware-controller"

// Membership is one replica's part in a group: it holds the replica's
// Lease (named after its identity) in a namespace, renews it, and answers,
// for each round, which keys the replica owns. Start it (it is a
// controller-runtime Runnable that runs on every replica) before asking.
type Membership struct {
	c      client.Client
	ns, id string
	o      options

	mu       sync.Mutex
	acquired time.Time
	writes   []write // the Lease's recent successful writes, oldest first
	rv       string  // resourceVersion of the last write
	stopped  bool
	round    time.Time // the round of view
	view     []string
	listErr  error
	listedAt time.Time
	members  []string // the last view logged
}

// write is one successful write of the Lease: the renewTime it wrote and
// when (by this replica's clock) the API server confirmed it.
type write struct{ renewed, done time.Time }

type options struct {
	group    string
	duration time.Duration
	renew    time.Duration
	step     time.Duration
	timing   Timing
	now      func() time.Time
	log      *slog.Logger
}

// Option configures New.
type Option func(*options)

// WithGroup names the group (default DefaultGroup): replicas share MPAs
// with the replicas of their group only.
func WithGroup(g string) Option { return func(o *options) { o.group = g } }

// WithLeaseDuration sets how long a renewal holds, in whole seconds
// (default: half the step, at least 1 s). A dead replica's share is taken
// over in the first round that starts after its Lease lapsed (plus the
// skew): when the duration, the skew and a round's work fit in one step,
// its MPAs miss at most one round.
func WithLeaseDuration(d time.Duration) Option { return func(o *options) { o.duration = d } }

// WithRenewInterval sets how often the Lease is renewed (default a quarter
// of its duration).
func WithRenewInterval(d time.Duration) Option { return func(o *options) { o.renew = d } }

// WithTiming sets the join delay and the clock skew bound (defaults: the
// lease duration, and 500 ms or a quarter of the lease duration if less).
func WithTiming(t Timing) Option { return func(o *options) { o.timing = t } }

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// New returns the membership of the replica identity (a DNS subdomain
// name: its Lease's) in namespace, for rounds of step. The client must
// read from the API server, not a cache: a round's listing must see every
// write confirmed before the round began.
func New(c client.Client, namespace, identity string, step time.Duration, opts ...Option) (*Membership, error) {
	o := options{group: DefaultGroup, step: step, duration: max(time.Second, (step / 2).Truncate(time.Second)),
		now: time.Now, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.renew == 0 {
		o.renew = o.duration / 4
	}
	if o.timing == (Timing{}) {
		o.timing = Timing{Join: o.duration, Skew: min(500*time.Millisecond, o.duration/4)}
	}
	var errs []error
	if c == nil {
		errs = append(errs, errors.New("a client is required"))
	}
	if namespace == "" {
		errs = append(errs, errors.New("a namespace for the Leases is required"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(identity) {
		errs = append(errs, fmt.Errorf("identity %q: %s", identity, msg))
	}
	for _, msg := range validation.IsValidLabelValue(o.group) {
		errs = append(errs, fmt.Errorf("group %q: %s", o.group, msg))
	}
	switch {
	case step <= 0:
		errs = append(errs, fmt.Errorf("step %s: must be positive", step))
	case o.duration < time.Second || o.duration%time.Second != 0:
		errs = append(errs, fmt.Errorf("lease duration %s: must be whole seconds, at least 1s (a Lease holds seconds)", o.duration))
	case o.timing.Skew < 0 || o.timing.Skew*4 > o.duration:
		errs = append(errs, fmt.Errorf("clock skew %s: must be between 0 and a quarter of the lease duration %s", o.timing.Skew, o.duration))
	case o.timing.Join <= o.timing.Skew:
		errs = append(errs, fmt.Errorf("join delay %s: must exceed the clock skew %s", o.timing.Join, o.timing.Skew))
	case o.renew <= 0 || o.renew > o.duration-2*o.timing.Skew:
		errs = append(errs, fmt.Errorf("renew interval %s: must be positive and at most the lease duration less twice the skew (%s)", o.renew, o.duration-2*o.timing.Skew))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("shard membership: %w", errors.Join(errs...))
	}
	return &Membership{c: c, ns: namespace, id: identity, o: o}, nil
}

// Identity is the replica's identity (its Lease's name).
func (m *Membership) Identity() string { return m.id }

// NeedLeaderElection tells controller-runtime to run the membership on
// every replica.
func (m *Membership) NeedLeaderElection() bool { return false }

// Start creates the Lease and renews it until ctx ends; then it hands the
// share over: it stops owning keys and backdates the Lease so that it
// lapses when the next round begins, and the others take over then
// instead of a lease duration later.
func (m *Membership) Start(ctx context.Context) error {
	if err := m.acquire(ctx); err != nil {
		return err
	}
	t := time.NewTicker(m.o.renew)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			m.release()
			return nil
		case <-t.C:
		}
		if err := m.renew(ctx); err != nil && ctx.Err() == nil {
			m.o.log.Warn("shard lease not renewed", "lease", m.ns+"/"+m.id, "err", err)
		}
		if n%16 == 15 {
			m.collect(ctx)
		}
	}
}

func (m *Membership) lease(now time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: m.id, Namespace: m.ns, Labels: map[string]string{GroupLabel: m.o.group}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(m.id),
			LeaseDurationSeconds: ptr.To(int32(m.o.duration / time.Second)),
			AcquireTime:          &metav1.MicroTime{Time: now},
			RenewTime:            &metav1.MicroTime{Time: now},
		},
	}
}

// acquire creates the Lease, or takes over one of the same identity whose
// holder is gone (lapsed); a live one means another replica runs with this
// identity, which is refused.
func (m *Membership) acquire(ctx context.Context) error {
	now := m.o.now().Truncate(time.Microsecond)
	l := m.lease(now)
	err := m.c.Create(ctx, l)
	if apierrors.IsAlreadyExists(err) {
		var old coordinationv1.Lease
		if err := m.c.Get(ctx, client.ObjectKeyFromObject(l), &old); err != nil {
			return fmt.Errorf("shard lease %s/%s: %w", m.ns, m.id, err)
		}
		if mem, ok := memberOf(&old); ok && !mem.Renewed.Add(mem.Duration+m.o.timing.Skew).Before(now) {
			return fmt.Errorf("shard lease %s/%s: held by a live replica (renewed %s): give each replica its own identity",
				m.ns, m.id, mem.Renewed.Format(time.RFC3339Nano))
		}
		old.Labels, old.Spec = l.Labels, l.Spec
		err = m.c.Update(ctx, &old)
		l = &old
	}
	if err != nil {
		return fmt.Errorf("shard lease %s/%s: %w", m.ns, m.id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acquired, m.rv = now, l.ResourceVersion
	m.writes = []write{{renewed: now, done: m.o.now()}}
	m.o.log.Info("shard lease acquired", "lease", m.ns+"/"+m.id, "group", m.o.group, "duration", m.o.duration, "join", m.o.timing.Join)
	return nil
}

// renew writes a new renewTime; a Lease deleted under the replica is
// created anew (the replica joins again, after the join delay).
func (m *Membership) renew(ctx context.Context) error {
	now := m.o.now().Truncate(time.Microsecond)
	m.mu.Lock()
	acquired, rv := m.acquired, m.rv
	m.mu.Unlock()
	l := m.lease(acquired)
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	l.ResourceVersion = rv
	err := m.c.Update(ctx, l)
	switch {
	case apierrors.IsNotFound(err):
		m.mu.Lock()
		m.writes = nil // no longer a member until created again
		m.mu.Unlock()
		return m.acquire(ctx)
	case apierrors.IsConflict(err):
		// Written behind this replica's back: read it and retry at the
		// next renewal.
		var cur coordinationv1.Lease
		if gerr := m.c.Get(ctx, client.ObjectKeyFromObject(l), &cur); gerr == nil {
			m.mu.Lock()
			m.rv = cur.ResourceVersion
			m.mu.Unlock()
		}
		return err
	case err != nil:
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rv = l.ResourceVersion
	m.writes = append(m.writes, write{renewed: now, done: m.o.now()})
	if len(m.writes) > 8 {
		m.writes = slices.Delete(m.writes, 0, len(m.writes)-8)
	}
	return nil
}

// release stops owning and backdates the Lease to lapse at the next
// round's start (plus the skew the others allow).
func (m *Membership) release() {
	m.mu.Lock()
	m.stopped = true
	acquired, rv := m.acquired, m.rv
	m.mu.Unlock()
	now := m.o.now()
	next := now.Truncate(m.o.step).Add(m.o.step)
	lapse := next.Add(-m.o.duration - m.o.timing.Skew - time.Microsecond).Truncate(time.Microsecond)
	l := m.lease(acquired)
	l.Spec.RenewTime = &metav1.MicroTime{Time: lapse}
	l.ResourceVersion = rv
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.c.Update(ctx, l); err != nil {
		m.o.log.Warn("shard lease not released; it lapses by itself", "lease", m.ns+"/"+m.id, "err", err)
		return
	}
	m.o.log.Info("shard lease released", "lease", m.ns+"/"+m.id, "lapses", lapse)
}

// collect deletes the group's Leases that lapsed ten durations ago
// (replicas that died), each only if unchanged since it was read.
func (m *Membership) collect(ctx context.Context) {
	var l coordinationv1.LeaseList
	if err := m.c.List(ctx, &l, client.InNamespace(m.ns), client.MatchingLabels{GroupLabel: m.o.group}); err != nil {
		return
	}
	now := m.o.now()
	for i := range l.Items {
		le := &l.Items[i]
		mem, ok := memberOf(le)
		if le.Name == m.id || (ok && mem.Renewed.Add(10*mem.Duration).After(now)) {
			continue
		}
		if !ok && le.CreationTimestamp.Add(10*m.o.duration).After(now) {
			continue
		}
		err := m.c.Delete(ctx, le, client.Preconditions{ResourceVersion: ptr.To(le.ResourceVersion)})
		if err == nil {
			m.o.log.Info("shard lease of a departed replica deleted", "lease", m.ns+"/"+le.Name)
		}
	}
}

// memberOf reads a Lease; false if it lacks what the protocol needs.
func memberOf(l *coordinationv1.Lease) (Member, bool) {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity != l.Name || s.LeaseDurationSeconds == nil || *s.LeaseDurationSeconds < 1 ||
		s.AcquireTime == nil || s.RenewTime == nil {
		return Member{}, false
	}
	return Member{Identity: l.Name, Acquired: s.AcquireTime.Time, Renewed: s.RenewTime.Time,
		Duration: time.Duration(*s.LeaseDurationSeconds) * time.Second}, true
}

// Owns reports whether this replica drives key in the round starting at
// round. The first call of a round lists the group's Leases (one request
// per replica and round); a failed listing is retried after a second, and
// until one succeeds the replica owns nothing (another replica may have
// joined: driving on an old view could drive a key twice).
func (m *Membership) Owns(ctx context.Context, key string, round time.Time) (bool, error) {
	members, drives, err := m.viewFor(ctx, round)
	if err != nil || !drives {
		return false, err
	}
	return Owner(key, members) == m.id, nil
}

func (m *Membership) viewFor(ctx context.Context, round time.Time) ([]string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return nil, false, nil
	}
	now := m.o.now()
	if !m.round.Equal(round) || (m.listErr != nil && now.Sub(m.listedAt) >= time.Second) {
		var l coordinationv1.LeaseList
		err := m.c.List(ctx, &l, client.InNamespace(m.ns), client.MatchingLabels{GroupLabel: m.o.group})
		m.round, m.listErr, m.listedAt, m.view = round, err, now, nil
		if err != nil {
			m.listErr = fmt.Errorf("shard: list the Leases of group %s: %w", m.o.group, err)
		} else {
			all := make([]Member, 0, len(l.Items))
			for i := range l.Items {
				if mem, ok := memberOf(&l.Items[i]); ok {
					all = append(all, mem)
				}
			}
			m.view = m.o.timing.Members(all, round)
			if !slices.Equal(m.view, m.members) {
				m.o.log.Info("shard members", "round", round, "members", m.view)
				m.members = m.view
			}
		}
	}
	if m.listErr != nil {
		return nil, false, m.listErr
	}
	return m.view, m.o.timing.Drives(m.self(round), round), nil
}

// self is this replica's Lease as of its last write confirmed more than
// the skew before round; s.mu is held.
func (m *Membership) self(round time.Time) Member {
	s := Member{Identity: m.id, Acquired: m.acquired, Duration: m.o.duration}
	for _, w := range m.writes {
		if w.done.Before(round.Add(-m.o.timing.Skew)) {
			s.Renewed = w.renewed
		}
	}
	if s.Renewed.IsZero() {
		s.Acquired = round.Add(time.Hour) // nothing confirmed in time: not a member yet
	}
	return s
}
