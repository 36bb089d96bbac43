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

// works holds the packing buffers of the matrix products (gemmWork),
// borrowed for one product at a time: as many as products ran at once,
// bounded by maxWorks. A free list, not a sync.Pool, so that a warm
// product never allocates (a sync.Pool drops entries under the race
// detector and at garbage collections).
var works struct {
	sync.Mutex
	free []*gemmWork
}

const maxWorks = 64

func borrowWork() *gemmWork {
	works.Lock()
	defer works.Unlock()
	n := len(works.free)
	if n == 0 {
		return new(gemmWork)
	}
	w := works.free[n-1]
	works.free = works.free[:n-1]
	return w
}

func giveBackWork(w *gemmWork) {
	works.Lock()
	defer works.Unlock()
	if len(works.free) < maxWorks {
		works.free = append(works.free, w)
	}
}
