package bootstrap

import "sync"

// scratch hands out the temporaries of one Update or Act: a BCQ update
// evaluates Samples generated actions per sampled state and needs about
// 360 KB of them, which a runner of a thousand agents, two updates each
// per 15 s step, would otherwise allocate at 48 MB/s. Agents share the
// arenas of the free list below, one per agent training or acting at
// that moment.
type scratch struct {
	buf []float64
	off int
}

// take returns n zeros that stay valid until the arena goes back.
func (s *scratch) take(n int) []float64 {
	if s.off+n > len(s.buf) {
		// Slices already taken keep the old storage; the next update
		// fits in the larger one.
		s.buf, s.off = make([]float64, max(2*len(s.buf), n, 1024)), 0
	}
	out := s.buf[s.off : s.off+n : s.off+n]
	s.off += n
	clear(out)
	return out
}

var arenas struct {
	sync.Mutex
	free []*scratch
}

// maxArenas bounds the free list: more agents than this updating or
// acting at once allocate arenas that go to the garbage collector.
const maxArenas = 16

func borrowScratch() *scratch {
	arenas.Lock()
	defer arenas.Unlock()
	n := len(arenas.free)
	if n == 0 {
		return new(scratch)
	}
	s := arenas.free[n-1]
	arenas.free = arenas.free[:n-1]
	return s
}

func giveBackScratch(s *scratch) {
	s.off = 0
	arenas.Lock()
	defer arenas.Unlock()
	if len(arenas.free) < maxArenas {
		arenas.free = append(arenas.free, s)
	}
}
