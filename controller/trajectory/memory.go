package trajectory

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"
)

// Memory is a Store that keeps everything in memory: the fake for tests of
// the controller, the meta learner and the lifecycle, with the same
// validation, ordering and tie-breaks as the persistent stores. Flush does
// nothing; Close drops the data. The zero value is not usable; call
// NewMemory.
type Memory struct {
	mu     sync.RWMutex
	ix     index[[]Step]
	closed bool
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{ix: newIndex[[]Step]()} }

// Append implements Store.
func (m *Memory) Append(ctx context.Context, steps ...Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	plan, err := m.ix.plan(steps)
	if err != nil {
		return err
	}
	for i := range steps {
		e := m.ix.add(&steps[i], plan[i])
		e.data = append(e.data, normalized(&steps[i]))
	}
	return nil
}

// Flush implements Store; memory needs no flushing.
func (m *Memory) Flush(ctx context.Context) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	return ctx.Err()
}

// RecentEpisodes implements Store.
func (m *Memory) RecentEpisodes(ctx context.Context, app string, n int) ([]Episode, error) {
	if err := checkCount("n", n); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	return m.ix.recent(app, n), ctx.Err()
}

// Top implements Store.
func (m *Memory) Top(ctx context.Context, app string, k int) ([]Trajectory, error) {
	if err := checkCount("m", k); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	a := m.ix.apps[app]
	if a == nil {
		return nil, ctx.Err()
	}
	var out []Trajectory
	for _, i := range topDone(a.eps, k) {
		e := &a.eps[i]
		out = append(out, Trajectory{Episode: e.toEpisode(app), Steps: cloneSteps(e.data)})
	}
	return out, ctx.Err()
}

// Range implements Store.
func (m *Memory) Range(ctx context.Context, app string, from, to time.Time) ([]Trajectory, error) {
	if err := checkRange(from, to); err != nil {
		return nil, err
	}
	lo, hi := rangeNanos(from), rangeNanos(to)
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	a := m.ix.apps[app]
	if a == nil {
		return nil, ctx.Err()
	}
	var out []Trajectory
	i, j := overlapping(a.eps, lo, hi)
	for _, e := range a.eps[i:j] {
		steps := e.data
		first := sort.Search(len(steps), func(k int) bool { return steps[k].Time.UnixNano() >= lo })
		last := sort.Search(len(steps), func(k int) bool { return steps[k].Time.UnixNano() >= hi })
		if first < last {
			out = append(out, summarize(app, cloneSteps(steps[first:last])))
		}
	}
	return out, ctx.Err()
}

// Apps implements Store.
func (m *Memory) Apps(ctx context.Context) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	return m.ix.names(), ctx.Err()
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	m.ix = newIndex[[]Step]()
	return nil
}

func cloneSteps(steps []Step) []Step {
	out := make([]Step, len(steps))
	for i := range steps {
		out[i] = steps[i]
		out[i].State = slices.Clone(steps[i].State)
		out[i].Action = slices.Clone(steps[i].Action)
	}
	return out
}
