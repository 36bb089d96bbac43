package trajectory

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// segPrefix names FileStore's segments (seg-0000000001.log, …) and their
// summaries (seg-0000000001.sum).
const segPrefix = "seg"

// FileStore is the embedded Store: every step is a CRC-checked record in
// an append-only log of segment files in one directory, and an in-memory
// index keeps, per application, the summary of each episode and the
// location of its last step; each step record points to the previous step
// of its episode, so Top and Range read an episode's steps from disk by
// following that chain, and memory holds the index only (about 64 bytes per
// episode), never the steps.
//
// Append writes the records at once (one write per call) and Flush fsyncs
// them. A segment that reaches the segment size (WithSegmentSize) is synced
// and sealed, a new one started, and a summary of the episodes it touched
// written beside it (seg-N.sum), so that opening the store reads the
// summaries of sealed segments and scans only the last segment (and any
// sealed one whose summary is missing or damaged). A torn or corrupt tail
// of the last segment, left by a crash in the middle of a write, is cut off
// at open with a warning on the logger; the records before it are kept.
//
// Retention (WithMaxBytes, WithMaxAge) drops whole sealed segments, oldest
// first, when a segment is sealed and at open, with every episode that
// began in them: an episode is kept whole or not at all, and an episode
// still in progress is copied forward into the active segment before its
// first steps go, so the newest episodes are never lost. Dropping whole
// segments is the store's compaction: no record outlives its segment, so
// the space of dropped episodes is reclaimed with it. An
// exclusive lock (flock on dir/LOCK) keeps a second store, in this process
// or another, out of the directory.
type FileStore struct {
	dir   string
	opts  options
	log   *slog.Logger
	lock  *os.File
	files *fileCache

	mu      sync.RWMutex
	ix      index[chain]
	w       *segWriter
	touched map[epKey]struct{} // episodes with steps in the active segment
	sealed  map[uint32]*segInfo
	newest  int64         // Unix ns of the newest step in the store
	floor   atomic.Uint32 // the oldest segment retention has kept
	buf     []byte
	closed  bool
	failed  error // the active segment is in an unknown state
}

// chain is FileStore's handle on an episode's steps: the location of its
// last step (each step points to the one before) and the segment holding
// its first, which retention needs to know whether dropping a segment cuts
// the episode.
type chain struct {
	last  loc
	first uint32
}

var _ Store = (*FileStore)(nil)

// epKey names one episode of one application.
type epKey struct {
	app     string
	episode int64
}

// OpenFile opens the store in dir, creating the directory and an empty
// store if needed, and rebuilds the index. It fails with ErrLocked if
// another store holds dir. Options: WithLogger, WithSegmentSize,
// WithMaxOpenFiles, and retention: WithMaxBytes, WithMaxAge.
func OpenFile(dir string, opts ...Option) (*FileStore, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("open trajectory store %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open trajectory store: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open trajectory store %s: %w", dir, err)
	}
	s := &FileStore{dir: dir, opts: o, log: o.logger.With("store", dir), lock: lock,
		ix: newIndex[chain](), touched: make(map[epKey]struct{}), sealed: make(map[uint32]*segInfo)}
	s.files = newFileCache(o.maxOpenFiles, func(seg uint32) (*os.File, error) {
		return os.Open(segPath(dir, segPrefix, seg))
	})
	if err := s.load(); err != nil {
		if s.w != nil {
			s.w.close()
		}
		s.files.close()
		_ = unlockDir(lock)
		return nil, fmt.Errorf("open trajectory store %s: %w", dir, err)
	}
	return s, nil
}

// load rebuilds the index from the segments and opens the last one for
// appending.
func (s *FileStore) load() error {
	ids, err := listSegments(s.dir, segPrefix)
	if err != nil {
		return err
	}
	var scratch record
	ld := loading{remnants: make(map[epKey]struct{})}
	if len(ids) > 0 {
		ld.firstLive = ids[0]
		s.floor.Store(ids[0])
	}
	for k, id := range ids {
		last := k == len(ids)-1
		if !last {
			if touched, ok := s.loadSummary(id, &ld); ok {
				if err := s.noteSealed(id, touched); err != nil {
					return err
				}
				continue
			}
		}
		touched := make(map[epKey]struct{})
		f, err := os.Open(segPath(s.dir, segPrefix, id))
		if err != nil {
			return err
		}
		end, torn, err := scanSegment(f, id, func(l loc, payload []byte) error {
			return s.replay(l, payload, &scratch, touched, &ld)
		})
		f.Close()
		if err != nil {
			return fmt.Errorf("segment %d: %w", id, err)
		}
		switch {
		case torn != nil && last:
			s.log.Warn("trajectory log: dropping a torn or corrupt tail left by an interrupted write",
				"segment", segPath(s.dir, segPrefix, id), "detail", torn.Error(), "bytes_dropped", torn.size-torn.off)
		case torn != nil:
			s.log.Error("trajectory log: corrupt record in a sealed segment; ignoring the rest of the segment",
				"segment", segPath(s.dir, segPrefix, id), "detail", torn.Error())
		}
		if last {
			if s.w, err = openSegmentWriter(s.dir, segPrefix, id, end); err != nil {
				return err
			}
			s.touched = touched
		} else {
			if err := s.writeSummary(id, touched); err != nil {
				s.log.Warn("trajectory log: cannot write segment summary; the next open rescans the segment", "err", err)
			}
			if err := s.noteSealed(id, touched); err != nil {
				return err
			}
		}
	}
	if s.w == nil {
		id := uint32(1)
		if len(ids) > 0 {
			id = ids[len(ids)-1] + 1
		}
		if s.w, err = createSegment(s.dir, segPrefix, id); err != nil {
			return err
		}
	}
	s.removeOrphanSummaries(ids)
	s.retain()
	return nil
}

// loading is what open carries from segment to segment besides the index.
type loading struct {
	// firstLive is the oldest segment on disk: retention removed the ones
	// before it, and an episode that began in one of them is gone.
	firstLive uint32
	// remnants are episodes that began in a removed segment, whose later
	// records are skipped.
	remnants map[epKey]struct{}
}

// replay adds the record at l, read at open, to the index. Records that do
// not fit the episode they claim (after damage further back) are skipped
// with a warning; records that pass their checksum but do not decode stop
// the open, as they mean a format this code does not know.
func (s *FileStore) replay(l loc, payload []byte, r *record, touched map[epKey]struct{}, ld *loading) error {
	if err := decodeRecord(payload, recStep, r); err != nil {
		return fmt.Errorf("record at offset %d: %w", l.off, err)
	}
	key := epKey{r.step.App, r.step.Episode}
	skip := func(why string, args ...any) error {
		s.log.Warn("trajectory log: skipping a step record that does not follow its episode",
			append([]any{"segment", l.seg, "offset", l.off, "app", r.step.App, "episode", r.step.Episode, "t", r.step.T, "why", why}, args...)...)
		return nil
	}
	if r.prev == (loc{}) && r.step.T == 0 {
		// A first step: a new episode, or retention's copy of an episode
		// in progress, which replaces the episode's older chain.
		delete(ld.remnants, key)
		if a := s.ix.apps[r.step.App]; a != nil && len(a.eps) > 0 && a.eps[len(a.eps)-1].episode == r.step.Episode {
			a.eps = a.eps[:len(a.eps)-1]
		}
	} else if _, gone := ld.remnants[key]; gone || (r.prev.seg != 0 && r.prev.seg < ld.firstLive) {
		ld.remnants[key] = struct{}{}
		return nil // the rest of an episode that began in a removed segment
	}
	p, err := s.ix.plan([]Step{r.step})
	if err != nil {
		return skip(err.Error())
	}
	if p[0].fresh {
		if r.prev != (loc{}) {
			return skip("first step of an episode points to a previous step")
		}
	} else if a := s.ix.apps[r.step.App]; a.eps[len(a.eps)-1].data.last != r.prev {
		return skip("previous-step pointer does not match the index")
	}
	e := s.ix.add(&r.step, p[0])
	e.data.last = l
	if p[0].fresh {
		e.data.first = l.seg
	}
	s.newest = max(s.newest, e.end)
	touched[key] = struct{}{}
	return nil
}

// Append implements Store. The records are written before Append returns
// (visible to readers, surviving a crash of this process) and durable
// after the next Flush.
func (s *FileStore) Append(ctx context.Context, steps ...Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.failed != nil {
		return fmt.Errorf("trajectory store %s: unusable after a failed write: %w", s.dir, s.failed)
	}
	if len(steps) == 0 {
		return nil
	}
	plan, err := s.ix.plan(steps)
	if err != nil {
		return err
	}
	est := 0
	for i := range steps {
		n := maxRecordSize(&steps[i])
		if n > maxPayload {
			return fmt.Errorf("%w: steps[%d] (app %q, episode %d, T %d): fields State and Action: %d values make a record over %d bytes",
				ErrInvalid, i, steps[i].App, steps[i].Episode, steps[i].T, len(steps[i].State)+len(steps[i].Action), maxPayload)
		}
		est += n
	}
	rotated := false
	if s.w.size > segHeader && s.w.size+int64(est) > s.opts.segmentSize {
		if err := s.rotate(); err != nil {
			s.log.Warn("trajectory log: cannot start a new segment; growing the current one", "err", err)
		} else {
			rotated = true
		}
	}
	buf := s.buf[:0]
	locs := make([]loc, len(steps))
	var batchLast map[string]loc
	if len(steps) > 1 {
		batchLast = make(map[string]loc)
	}
	for i := range steps {
		st := &steps[i]
		var prev loc
		if !plan[i].fresh {
			if l, ok := batchLast[st.App]; ok {
				prev = l
			} else {
				a := s.ix.apps[st.App]
				prev = a.eps[len(a.eps)-1].data.last
			}
		}
		start := len(buf)
		buf = appendStoredStep(buf, st, prev)
		locs[i] = loc{seg: s.w.id, off: s.w.size + int64(start), size: uint32(len(buf) - start)}
		if batchLast != nil {
			batchLast[st.App] = locs[i]
		}
	}
	if err := s.w.write(buf); err != nil {
		// The failed write was cut back unless the segment is broken, in
		// which case its tail is unknown until the next open repairs it.
		s.failed = s.w.broken
		return fmt.Errorf("trajectory store %s: %w", s.dir, err)
	}
	if cap(buf) <= 1<<20 {
		s.buf = buf
	}
	for i := range steps {
		e := s.ix.add(&steps[i], plan[i])
		e.data.last = locs[i]
		if plan[i].fresh {
			e.data.first = locs[i].seg
		}
		s.newest = max(s.newest, e.end)
		s.touched[epKey{steps[i].App, steps[i].Episode}] = struct{}{}
	}
	if rotated {
		// After the write, so that the episodes just continued are in the
		// active segment and retention keeps them.
		s.retain()
	}
	return nil
}

// rotate seals the active segment and starts the next; s.mu is held.
func (s *FileStore) rotate() error {
	if err := s.w.sync(); err != nil {
		return err
	}
	sealed := s.w.id
	nw, err := createSegment(s.dir, segPrefix, sealed+1)
	if err != nil {
		return err
	}
	s.w.close()
	s.w = nw
	if err := s.writeSummary(sealed, s.touched); err != nil {
		s.log.Warn("trajectory log: cannot write segment summary; the next open rescans the segment", "err", err)
	}
	err = s.noteSealed(sealed, s.touched)
	s.touched = make(map[epKey]struct{})
	return err
}

// Flush implements Store: it fsyncs the active segment (sealed segments
// were synced when sealed).
func (s *FileStore) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	w := s.w
	s.mu.RUnlock()
	// Sync outside the lock so that appends go on; a segment sealed in the
	// meantime was synced by rotate.
	if err := w.f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("trajectory store %s: flush: %w", s.dir, err)
	}
	return nil
}

// RecentEpisodes implements Store.
func (s *FileStore) RecentEpisodes(ctx context.Context, app string, n int) ([]Episode, error) {
	if err := checkCount("n", n); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.ix.recent(app, n), ctx.Err()
}

// Top implements Store.
func (s *FileStore) Top(ctx context.Context, app string, m int) ([]Trajectory, error) {
	if err := checkCount("m", m); err != nil {
		return nil, err
	}
	eps, err := s.entries(app, func(a *appIndex[chain]) []entry[chain] {
		var out []entry[chain]
		for _, i := range topDone(a.eps, m) {
			out = append(out, a.eps[i])
		}
		return out
	})
	if err != nil {
		return nil, err
	}
	out := make([]Trajectory, 0, len(eps))
	for _, e := range eps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		steps, err := s.readEpisode(app, e, math.MinInt64, math.MaxInt64)
		if errors.Is(err, errRetired) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Trajectory{Episode: e.toEpisode(app), Steps: steps})
	}
	return out, nil
}

// Range implements Store.
func (s *FileStore) Range(ctx context.Context, app string, from, to time.Time) ([]Trajectory, error) {
	if err := checkRange(from, to); err != nil {
		return nil, err
	}
	lo, hi := rangeNanos(from), rangeNanos(to)
	eps, err := s.entries(app, func(a *appIndex[chain]) []entry[chain] {
		i, j := overlapping(a.eps, lo, hi)
		return slices.Clone(a.eps[i:j])
	})
	if err != nil {
		return nil, err
	}
	var out []Trajectory
	for _, e := range eps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		steps, err := s.readEpisode(app, e, lo, hi)
		if errors.Is(err, errRetired) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(steps) > 0 {
			out = append(out, summarize(app, steps))
		}
	}
	return out, nil
}

// entries copies the index entries pick chooses for app.
func (s *FileStore) entries(app string, pick func(*appIndex[chain]) []entry[chain]) ([]entry[chain], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	a := s.ix.apps[app]
	if a == nil {
		return nil, nil
	}
	return pick(a), nil
}

// readEpisode reads the steps of e with Time in [lo, hi), oldest first, by
// following the chain back from its last step.
func (s *FileStore) readEpisode(app string, e entry[chain], lo, hi int64) ([]Step, error) {
	var out []Step
	buf := make([]byte, 0, 4096)
	l := e.data.last
	for t := int(e.steps) - 1; t >= 0; t-- {
		fail := func(err error) ([]Step, error) {
			return nil, fmt.Errorf("trajectory store %s: app %q episode %d step %d (segment %d offset %d): %w",
				s.dir, app, e.episode, t, l.seg, l.off, err)
		}
		if l.seg == 0 {
			return fail(fmt.Errorf("%w: the chain of steps ends early", ErrCorrupt))
		}
		cf, err := s.files.acquire(l.seg)
		if err != nil {
			if l.seg < s.floor.Load() {
				// Retention removed the segment after the entry was read.
				return nil, errRetired
			}
			return fail(err)
		}
		payload, err := readRecord(cf.f, l, &buf)
		var r record
		if err == nil {
			err = decodeRecord(payload, recStep, &r)
		}
		s.files.release(cf)
		if err != nil {
			return fail(err)
		}
		if r.step.App != app || r.step.Episode != e.episode || r.step.T != t {
			return fail(fmt.Errorf("%w: the record holds app %q episode %d step %d", ErrCorrupt, r.step.App, r.step.Episode, r.step.T))
		}
		ns := r.step.Time.UnixNano()
		if ns < lo {
			break
		}
		if ns < hi {
			out = append(out, r.step)
		}
		l = r.prev
	}
	slices.Reverse(out)
	return out, nil
}

// Apps implements Store.
func (s *FileStore) Apps(ctx context.Context) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.ix.names(), ctx.Err()
}

// Dir returns the store's directory.
func (s *FileStore) Dir() string { return s.dir }

// Close implements Store: it syncs and closes the log and releases the
// directory lock.
func (s *FileStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	err := s.w.sync()
	if cerr := s.w.close(); err == nil {
		err = cerr
	}
	s.ix = newIndex[chain]()
	s.mu.Unlock()
	s.files.close()
	if uerr := unlockDir(s.lock); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("close trajectory store %s: %w", s.dir, err)
	}
	return nil
}

// fileCache keeps up to max segment files open for reading, least recently
// used closed first; files in use are never closed under their reader.
type fileCache struct {
	mu     sync.Mutex
	open   func(seg uint32) (*os.File, error)
	max    int
	files  map[uint32]*cachedFile
	lru    list.List // of *cachedFile, most recent first
	closed bool
}

type cachedFile struct {
	f    *os.File
	seg  uint32
	refs int
	el   *list.Element // nil once dropped from the cache
}

func newFileCache(max int, open func(uint32) (*os.File, error)) *fileCache {
	return &fileCache{open: open, max: max, files: make(map[uint32]*cachedFile)}
}

func (c *fileCache) acquire(seg uint32) (*cachedFile, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if cf := c.files[seg]; cf != nil {
		cf.refs++
		c.lru.MoveToFront(cf.el)
		return cf, nil
	}
	f, err := c.open(seg)
	if err != nil {
		return nil, err
	}
	cf := &cachedFile{f: f, seg: seg, refs: 1}
	cf.el = c.lru.PushFront(cf)
	c.files[seg] = cf
	c.evict()
	return cf, nil
}

func (c *fileCache) release(cf *cachedFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cf.refs--
	if cf.refs == 0 && cf.el == nil {
		cf.f.Close()
		return
	}
	c.evict()
}

// evict drops unused files beyond max, least recent first; c.mu is held.
func (c *fileCache) evict() {
	for e := c.lru.Back(); e != nil && len(c.files) > c.max; {
		prev := e.Prev()
		if cf := e.Value.(*cachedFile); cf.refs == 0 {
			c.drop(cf)
		}
		e = prev
	}
}

// drop removes cf from the cache, closing it unless in use; c.mu is held.
func (c *fileCache) drop(cf *cachedFile) {
	c.lru.Remove(cf.el)
	cf.el = nil
	delete(c.files, cf.seg)
	if cf.refs == 0 {
		cf.f.Close()
	}
}

// forget closes seg's file once no reader uses it.
func (c *fileCache) forget(seg uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cf := c.files[seg]; cf != nil {
		c.drop(cf)
	}
}

func (c *fileCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, cf := range c.files {
		c.drop(cf)
	}
}
