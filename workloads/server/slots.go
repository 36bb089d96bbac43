package server

import (
	"container/list"
	"context"
	"sync"
)

// slots is a FIFO counting semaphore: at most n holders at once, and
// waiters acquire in the order they arrived (no barging: a newcomer waits
// while anyone is queued, even if a slot is free for an instant). A waiter
// whose context ends leaves the queue without acquiring.
type slots struct {
	mu      sync.Mutex
	free    int
	waiters list.List // of chan struct{}, closed when granted
}

func newSlots(n int) *slots { return &slots{free: n} }

// tryAcquire takes a slot if one is free and nobody waits for one.
func (s *slots) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free > 0 && s.waiters.Len() == 0 {
		s.free--
		return true
	}
	return false
}

// acquire takes a slot, waiting in FIFO order behind earlier callers. It
// returns ctx.Err() without a slot if ctx ends first (also when the slot
// was granted in the same instant: it is passed on to the next waiter).
func (s *slots) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.free > 0 && s.waiters.Len() == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	elem := s.waiters.PushBack(ready)
	s.mu.Unlock()

	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-ready: // granted as ctx ended: hand the slot on
		s.releaseLocked()
	default:
		s.waiters.Remove(elem)
	}
	return ctx.Err()
}

// release returns a slot, granting it to the longest waiter if any.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
}

func (s *slots) releaseLocked() {
	if front := s.waiters.Front(); front != nil {
		s.waiters.Remove(front)
		close(front.Value.(chan struct{}))
		return
	}
	s.free++
}

// waiting is the number of queued callers.
func (s *slots) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters.Len()
}
