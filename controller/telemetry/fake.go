package telemetry

import (
	"context"
	"errors"
	"sync"
	"time"
)

// FakeCall is one Snapshot call a Fake saw.
type FakeCall struct {
	Window time.Duration
	At     time.Time
}

// Fake is a Snapshotter for tests: it returns the scripted snapshots in
// order, repeating the last, or Err when set; each returned snapshot is a
// shallow copy whose At and Window are the call's when zero in the script.
// It records its calls and is safe for concurrent use.
type Fake struct {
	mu        sync.Mutex
	Snapshots []*Snapshot
	Err       error
	Calls     []FakeCall
}

// NewFake returns a Fake that plays snapshots.
func NewFake(snapshots ...*Snapshot) *Fake { return &Fake{Snapshots: snapshots} }

// Snapshot implements Snapshotter.
func (f *Fake) Snapshot(ctx context.Context, window time.Duration, at time.Time) (*Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.Calls)
	f.Calls = append(f.Calls, FakeCall{Window: window, At: at})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.Err != nil {
		return nil, f.Err
	}
	if len(f.Snapshots) == 0 {
		return nil, errors.New("telemetry fake: no snapshot scripted")
	}
	s := *f.Snapshots[min(n, len(f.Snapshots)-1)]
	if s.At.IsZero() {
		s.At = at
	}
	if s.Window == 0 {
		s.Window = window
	}
	return &s, nil
}

// CallCount returns how many times Snapshot was called.
func (f *Fake) CallCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Calls)
}

var _ Snapshotter = (*Fake)(nil)
