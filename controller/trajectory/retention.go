package trajectory

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"
)

// errRetired is readEpisode's answer for an episode whose steps retention
// removed after the reader copied its index entry: Top and Range leave it
// out, as they would had they run a moment later.
var errRetired = errors.New("removed by retention")

// segInfo is what retention knows of a sealed segment.
type segInfo struct {
	size   int64   // bytes on disk
	newest int64   // Unix ns of its newest step
	eps    []epKey // the episodes with steps in it
}

// noteSealed records sealed segment id, whose episodes are touched, for
// retention; s.mu is held (or the store is being opened).
func (s *FileStore) noteSealed(id uint32, touched map[epKey]struct{}) error {
	st, err := os.Stat(segPath(s.dir, segPrefix, id))
	if err != nil {
		return err
	}
	info := &segInfo{size: st.Size(), newest: math.MinInt64, eps: make([]epKey, 0, len(touched))}
	for k := range touched {
		info.eps = append(info.eps, k)
		if a := s.ix.apps[k.app]; a != nil {
			for i := len(a.eps) - 1; i >= 0; i-- {
				if a.eps[i].episode == k.episode {
					// The entry as it stands when the segment is sealed
					// ends with the segment's last step of the episode.
					if a.eps[i].data.last.seg == id {
						info.newest = max(info.newest, a.eps[i].end)
					}
					break
				}
			}
		}
	}
	s.sealed[id] = info
	return nil
}

// retain drops sealed segments, oldest first, while they fill more than
// WithMaxBytes less one segment (the active segment's room) or the oldest segment's newest step is older than
// WithMaxAge before the store's newest step; s.mu is held. A segment that
// cannot be dropped stops retention until the next rotation, with a
// warning: the store grows rather than lose what it cannot move.
func (s *FileStore) retain() {
	if s.opts.maxBytes == 0 && s.opts.maxAge == 0 {
		return
	}
	for {
		ids := s.sealedIDs()
		if len(ids) == 0 {
			return
		}
		oldest := ids[0]
		var sealed int64
		for _, id := range ids {
			sealed += s.sealed[id].size
		}
		info := s.sealed[oldest]
		// The active segment's room is kept free of the bound, so that a
		// store is judged the same at every seal and at open.
		overSize := s.opts.maxBytes > 0 && sealed > s.opts.maxBytes-s.opts.segmentSize
		overAge := s.opts.maxAge > 0 && info.newest < s.newest-s.opts.maxAge.Nanoseconds()
		if !overSize && !overAge {
			return
		}
		if err := s.drop(oldest); err != nil {
			s.log.Warn("trajectory log: retention cannot drop the oldest segment; keeping it",
				"segment", segPath(s.dir, segPrefix, oldest), "err", err)
			return
		}
	}
}

func (s *FileStore) sealedIDs() []uint32 {
	ids := make([]uint32, 0, len(s.sealed))
	for id := range s.sealed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// drop removes sealed segment k, the oldest, and every episode that began
// in it, except an episode still in progress (its app's last, not done,
// with steps after k), whose steps are first copied to the active segment
// as a new chain: retention never keeps part of an episode and never loses
// one that is being written. The copies are synced before the segment is
// removed, so a crash at any point leaves either the old chain or the copy
// (open prefers the copy). s.mu is held.
func (s *FileStore) drop(k uint32) error {
	info := s.sealed[k]
	apps := make(map[string]struct{})
	for _, key := range info.eps {
		apps[key.app] = struct{}{}
	}
	type cut struct {
		app  string
		n    int  // leading episodes to drop
		copy bool // the app's last episode moves instead
	}
	var cuts []cut
	for app := range apps {
		a := s.ix.apps[app]
		if a == nil {
			continue
		}
		n := 0
		for n < len(a.eps) && a.eps[n].data.first <= k {
			n++
		}
		c := cut{app: app, n: n}
		if last := a.eps[len(a.eps)-1]; n == len(a.eps) && !last.done && last.data.last.seg > k {
			c.copy = true
			c.n--
		}
		cuts = append(cuts, c)
	}
	slices.SortFunc(cuts, func(x, y cut) int { return cmp.Compare(x.app, y.app) })
	copied := false
	for _, c := range cuts {
		if c.copy {
			if err := s.copyForward(c.app); err != nil {
				return err
			}
			copied = true
		}
	}
	if copied {
		if err := s.w.sync(); err != nil {
			s.failed = err
			return err
		}
	}
	for _, c := range cuts {
		a := s.ix.apps[c.app]
		a.eps = slices.Delete(a.eps, 0, c.n)
		if len(a.eps) == 0 {
			delete(s.ix.apps, c.app)
		}
	}
	delete(s.sealed, k)
	s.floor.Store(k + 1)
	s.files.forget(k)
	// The summary first: a segment without one is rescanned; a summary
	// without its segment is an orphan the next open removes.
	if err := os.Remove(sumPath(s.dir, k)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Remove(segPath(s.dir, segPrefix, k)); err != nil {
		return err
	}
	return syncDir(s.dir)
}

// copyForward rewrites app's last episode into the active segment as a new
// chain and points the index at it; s.mu is held.
func (s *FileStore) copyForward(app string) error {
	a := s.ix.apps[app]
	e := &a.eps[len(a.eps)-1]
	steps, err := s.readEpisode(app, *e, math.MinInt64, math.MaxInt64)
	if err != nil {
		return fmt.Errorf("copy episode %d of %q forward: %w", e.episode, app, err)
	}
	buf := s.buf[:0]
	var prev loc
	var last loc
	for i := range steps {
		start := len(buf)
		buf = appendStoredStep(buf, &steps[i], prev)
		last = loc{seg: s.w.id, off: s.w.size + int64(start), size: uint32(len(buf) - start)}
		prev = last
	}
	if err := s.w.write(buf); err != nil {
		s.failed = s.w.broken
		return fmt.Errorf("copy episode %d of %q forward: %w", e.episode, app, err)
	}
	e.data = chain{last: last, first: s.w.id}
	s.touched[epKey{app, e.episode}] = struct{}{}
	return nil
}

// removeOrphanSummaries removes summaries whose segment is gone (a crash
// between the two removals of drop).
func (s *FileStore) removeOrphanSummaries(ids []uint32) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, de := range ents {
		var id uint32
		if _, err := fmt.Sscanf(de.Name(), segPrefix+"-%010d.sum", &id); err != nil || de.Name() != fmt.Sprintf("%s-%010d.sum", segPrefix, id) {
			continue
		}
		if _, ok := slices.BinarySearch(ids, id); !ok {
			os.Remove(sumPath(s.dir, id))
		}
	}
}

// WithMaxBytes bounds FileStore's segments on disk (0, the default: no
// bound): when a segment is sealed and the store is over the bound, the
// oldest segments are dropped with the episodes that began in them
// (episodes in progress are moved forward, never lost). It must be at
// least twice the segment size.
func WithMaxBytes(n int64) Option { return func(o *options) { o.maxBytes = n } }

// WithMaxAge drops FileStore's sealed segments whose newest step is older
// than d before the store's newest step (0, the default: no bound), with
// the episodes that began in them. Age is measured in step time, not wall
// time, so a store of replayed or simulated steps keeps what it was given.
func WithMaxAge(d time.Duration) Option { return func(o *options) { o.maxAge = d } }
