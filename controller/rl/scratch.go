package rl

import (
	"math/bits"
	"sync"
)

// Scratch storage shared by every network of the process. A process that
// keeps many networks and trains or evaluates few of them at a time (the
// agent runner hosts an agent per MPA and trains one at a time) should hold
// their transient storage (gradients, batch workspaces, packing buffers and
// an optimiser's float64 moments) only while a network uses it: Release
// and Adam.Compact return it here and the next pass borrows it again, so
// that idle networks cost their parameters alone and a warm process trains
// without allocating. The pools are sync.Pools: what no network borrows
// again is freed by the garbage collector within two cycles.

// floatPools[c] holds *[]float64 whose capacity is size class c.
var floatPools [9 + 4*bits.UintSize]sync.Pool

// sizeClass returns the class of n > 0 and its capacity: n rounded up to
// m·2^e with m in 4…7 (8 and below exactly), so that a borrowed buffer
// wastes at most a quarter of its length.
func sizeClass(n int) (class, capacity int) {
	if n <= 8 {
		return n, n
	}
	e := bits.Len(uint(n-1)) - 3
	m := (n-1)>>e + 1 // 4…8
	if m == 8 {
		m, e = 4, e+1
	}
	return 9 + 4*e + m - 4, m << e
}

// borrow returns a buffer of length n with unspecified contents, from the
// pools when one of its class is free.
func borrow(n int) []float64 {
	if n <= 0 {
		return nil
	}
	c, size := sizeClass(n)
	if p, ok := floatPools[c].Get().(*[]float64); ok {
		return (*p)[:n]
	}
	return make([]float64, n, size)
}

// borrowZeroed is borrow with every entry zero.
func borrowZeroed(n int) []float64 {
	s := borrow(n)
	clear(s)
	return s
}

// giveBack returns s, which its owner must no longer use, to the pools.
// Buffers that borrow did not make (their capacity is not a class's) are
// left to the garbage collector.
func giveBack(s []float64) {
	if cap(s) == 0 {
		return
	}
	c, size := sizeClass(cap(s))
	if size != cap(s) {
		return
	}
	s = s[:size]
	floatPools[c].Put(&s)
}

// freeList is a bounded stack of reusable values, borrowed one caller at a
// time: as many as were in use at once, at most max. A free list, not a
// sync.Pool, so that a warm caller never allocates (a sync.Pool drops
// entries under the race detector and at garbage collections).
type freeList[T any] struct {
	mu   sync.Mutex
	free []*T
	max  int
}

// get returns a free value, or a new zero one.
func (l *freeList[T]) get() *T {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.free)
	if n == 0 {
		return new(T)
	}
	x := l.free[n-1]
	l.free = l.free[:n-1]
	return x
}

// put returns x, which its caller must no longer use; beyond max it is
// left to the garbage collector.
func (l *freeList[T]) put(x *T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.free) < l.max {
		l.free = append(l.free, x)
	}
}

// works holds the packing buffers of the matrix products (gemmWork),
// borrowed for one product at a time.
var works = freeList[gemmWork]{max: 64}

func borrowWork() *gemmWork    { return works.get() }
func giveBackWork(w *gemmWork) { works.put(w) }

// Scratch hands out the temporaries of one computation (an agent's update
// or action): slices that stay valid until Release. A BCQ update needs
// about 360 KB of them, which a runner of a thousand agents, two updates
// each per 15 s step, would otherwise allocate at 48 MB/s. Scratches come
// from a free list shared by the process, one per computation running at
// that moment (at most 16 kept). A Scratch is not safe for concurrent use.
type Scratch struct {
	buf []float64
	off int
}

var scratches = freeList[Scratch]{max: 16}

// BorrowScratch returns a Scratch; Release gives it back.
func BorrowScratch() *Scratch { return scratches.get() }

// Take returns n zeros that stay valid until s is released.
func (s *Scratch) Take(n int) []float64 {
	if s.off+n > len(s.buf) {
		// Slices already taken keep the old storage; the next
		// computation fits in the larger one.
		s.buf, s.off = make([]float64, max(2*len(s.buf), n, 1024)), 0
	}
	out := s.buf[s.off : s.off+n : s.off+n]
	s.off += n
	clear(out)
	return out
}

// Release gives s back; no slice it handed out may be used afterwards.
func (s *Scratch) Release() {
	s.off = 0
	scratches.put(s)
}
