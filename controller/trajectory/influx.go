package trajectory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// InfluxStore is a Store in InfluxDB 1.x, spoken to over its HTTP API
// (see the schema at measSteps). Append validates steps, writes them to a
// journal in the spool directory (see journal: a killed process loses no
// step; the next open delivers them) and buffers them in memory; a
// background flusher sends them in batches (WithBatchSize, or
// every WithFlushInterval). When InfluxDB cannot be reached, answers 5xx,
// or refuses for reasons of its own state (401, 403, 404 database not
// found, 408, 429), the batch and everything buffered after it go, in
// order, to a durable spool on local disk (fsynced segment files in the
// spool directory) and are retried with exponential backoff
// (WithRetryBackoff), oldest first, before any newer step; the spool
// survives a restart: opening the store in the same directory replays it.
// A batch InfluxDB refuses as bad data (another 4xx) is not retried: it is
// appended to rejected.lp in the spool directory, logged, and reported by
// the next Flush as ErrRejected.
//
// Flush returns nil once everything appended before it is in InfluxDB, or
// an error matching ErrSpooled if some of it is durably spooled instead
// (InfluxDB down); Status tells the same without waiting. Reads first
// deliver what is buffered, so that they see every step appended before
// them, then query InfluxDB; they fail, naming the URL, while it is down.
//
// Append checks each application's order against the last step it knows:
// from this process, the spool, or InfluxDB (read at open). If InfluxDB is
// down at open, steps of an application it has not seen yet are checked
// among themselves only, and a step continuing an earlier episode (T > 0)
// of such an application fails with ErrUnavailable until InfluxDB answers.
type InfluxStore struct {
	c    *influxClient
	dir  string
	opts options
	log  *slog.Logger
	lock *os.File
	sp   *spool   // used by the flusher goroutine only, after open
	jr   *journal // under mu

	mu          sync.Mutex
	tr          index[struct{}] // the last episode of each application
	synced      bool            // tr holds InfluxDB's state
	lastSync    time.Time
	pending     []spooled // appended, not yet sent or spooled, in order
	inflight    int       // steps being sent
	spooledN    int       // steps in the spool
	room        chan struct{}
	unreachable bool
	lastErr     error
	rejected    []error // since the last Flush
	rejectedN   int
	spoolErr    error // the last spooling failed: steps held in memory only
	closed      bool

	// owned by the flusher goroutine
	dbReady    bool
	syncWarned bool
	backoff    time.Duration
	nextTry    time.Time

	kick   chan struct{}
	reqs   chan flushReq
	stop   chan struct{}
	done   chan struct{}
	forced atomic.Int64 // forced rounds run (Flush, reads, Close)
}

// flushQueue bounds the Flush calls queued for the flusher. Those queued
// when it starts a forced round share that round (group commit): at an
// episode boundary every MPA's lifecycle read flushes at once, and one
// round per caller would serialise them behind as many InfluxDB writes.
const flushQueue = 256

var _ Store = (*InfluxStore)(nil)

type flushReq struct {
	ctx   context.Context
	reply chan error
}

// InfluxStatus is InfluxStore's delivery state.
type InfluxStatus struct {
	Buffered    int   // steps in memory awaiting delivery (including a batch being sent)
	Spooled     int   // steps in the local spool awaiting delivery
	Unreachable bool  // the last delivery attempt failed
	LastError   error // the error of the last failed attempt
	Rejected    int   // batches InfluxDB refused since open (kept in rejected.lp)
}

// syncRetry spaces attempts of Append to read the last steps from InfluxDB.
const syncRetry = time.Second

// OpenInflux opens a store in the InfluxDB at baseURL (such as
// http://127.0.0.1:8086) with its spool in spoolDir (created if needed,
// locked against a second store). It replays the spool, creates the
// database (WithDatabase, default "aware") and reads the last step of each
// application; if InfluxDB cannot be reached it logs a warning and opens
// anyway, spooling until it is back. It fails on a 4xx answer, such as bad
// credentials. Options: WithDatabase, WithRetentionPolicy, WithBatchSize,
// WithFlushInterval, WithRetryBackoff, WithHTTPClient, WithRequestTimeout,
// WithCredentials, WithMaxBuffered, WithLogger, WithSegmentSize.
func OpenInflux(ctx context.Context, baseURL, spoolDir string, opts ...Option) (*InfluxStore, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("open InfluxDB trajectory store: %w", err)
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, fmt.Errorf("open InfluxDB trajectory store: URL %q: want http(s)://host[:port][/path]", baseURL)
	}
	if err := os.MkdirAll(spoolDir, 0o755); err != nil {
		return nil, fmt.Errorf("open InfluxDB trajectory store: spool: %w", err)
	}
	lock, err := lockDir(spoolDir)
	if err != nil {
		return nil, fmt.Errorf("open InfluxDB trajectory store: spool %s: %w", spoolDir, err)
	}
	// Credentials in the URL are used like WithCredentials and kept out
	// of logs and errors.
	user, pass := o.username, o.password
	if u.User != nil {
		if user == "" && pass == "" {
			user = u.User.Username()
			pass, _ = u.User.Password()
		}
		u.User = nil
	}
	base := strings.TrimRight(u.String(), "/")
	s := &InfluxStore{
		c: &influxClient{base: base, db: o.database, rp: o.retention, hc: o.client,
			timeout: o.requestTimeout, user: user, pass: pass},
		dir: spoolDir, opts: o, log: o.logger.With("influxdb", base, "spool", spoolDir), lock: lock,
		tr: newIndex[struct{}](), room: make(chan struct{}),
		kick: make(chan struct{}, 1), reqs: make(chan flushReq, flushQueue), stop: make(chan struct{}), done: make(chan struct{}),
	}
	s.sp, err = openSpool(spoolDir, s.log, o.segmentSize, func(st *spooled) { s.remember(st) })
	if err != nil {
		_ = unlockDir(lock)
		return nil, fmt.Errorf("open InfluxDB trajectory store: spool %s: %w", spoolDir, err)
	}
	if err := s.recoverJournal(); err != nil {
		s.sp.close()
		_ = unlockDir(lock)
		return nil, fmt.Errorf("open InfluxDB trajectory store: %w", err)
	}
	s.spooledN = s.sp.count
	if s.spooledN > 0 {
		s.log.Info("trajectory spool: steps from an earlier run await delivery", "steps", s.spooledN)
	}
	switch err := s.ensureDB(ctx); {
	case err == nil:
		s.dbReady = true
		if err := s.sync(ctx); err != nil {
			s.log.Warn("InfluxDB: cannot read the applications' last steps", "err", err)
		}
	case misconfigured(err):
		s.sp.close()
		_ = unlockDir(lock)
		return nil, fmt.Errorf("open InfluxDB trajectory store: %w", err)
	default:
		s.log.Warn("InfluxDB unreachable at open; steps are spooled until it is back", "err", err)
	}
	go s.run()
	return s, nil
}

// recoverJournal moves the steps the journal holds (accepted by an earlier
// run, perhaps never delivered) to the spool, then removes the journal.
// Steps newer than what the spool told the tracker become the last known.
func (s *InfluxStore) recoverJournal() error {
	jr, steps, ids, err := openJournal(s.dir, s.log, s.opts.segmentSize)
	if err != nil {
		return fmt.Errorf("journal in %s: %w", s.dir, err)
	}
	s.jr = jr
	if len(steps) > 0 {
		if err := s.sp.append(steps); err != nil {
			return fmt.Errorf("journal in %s: moving %d steps to the spool: %w", s.dir, len(steps), err)
		}
		for i := range steps {
			s.rememberNewer(&steps[i])
		}
		s.log.Info("trajectory journal: steps accepted by an earlier run moved to the spool for delivery", "steps", len(steps))
	}
	return removeJournal(s.dir, ids)
}

// misconfigured reports whether an error at open is the caller's to fix
// (a 4xx answer, a failed statement) rather than an outage.
func misconfigured(err error) bool {
	var qe *statementError
	var se *statusError
	return errors.As(err, &qe) || (errors.As(err, &se) && se.status/100 == 4)
}

// remember makes st the last known step of its application; s.mu is held
// or s not yet shared.
func (s *InfluxStore) remember(st *spooled) {
	a := s.tr.apps[st.App]
	if a == nil {
		a = &appIndex[struct{}]{}
		s.tr.apps[st.App] = a
	}
	a.stateDim, a.actionDim = len(st.State), len(st.Action)
	a.eps = append(a.eps[:0], entry[struct{}]{meta: meta{episode: st.Episode, start: st.epStart,
		end: st.Time.UnixNano(), reward: st.epReward, steps: int32(st.T + 1), done: st.Done}})
}

// rememberNewer is remember unless the tracker knows a later step of the
// application.
func (s *InfluxStore) rememberNewer(st *spooled) {
	if a := s.tr.apps[st.App]; a != nil && len(a.eps) > 0 {
		m := a.eps[len(a.eps)-1].meta
		if m.episode > st.Episode || (m.episode == st.Episode && int(m.steps) > st.T+1) {
			return
		}
	}
	s.remember(st)
}

// ensureDB creates the database and, if asked, the retention policy.
func (s *InfluxStore) ensureDB(ctx context.Context) error {
	if err := s.c.exec(ctx, "CREATE DATABASE "+quoteIdent(s.opts.database)); err != nil {
		return err
	}
	if s.opts.retentionDur <= 0 {
		return nil
	}
	dur := strconv.FormatInt(int64(s.opts.retentionDur/time.Second), 10) + "s"
	on := quoteIdent(s.opts.retention) + " ON " + quoteIdent(s.opts.database)
	err := s.c.exec(ctx, "CREATE RETENTION POLICY "+on+" DURATION "+dur+" REPLICATION 1")
	var se *statementError
	if errors.As(err, &se) && (strings.Contains(se.msg, "already exists") || strings.Contains(se.msg, "conflict")) {
		err = s.c.exec(ctx, "ALTER RETENTION POLICY "+on+" DURATION "+dur)
	}
	return err
}

// sync reads the last step of every application from InfluxDB into the
// tracker, for applications it does not know yet (what this process or
// the spool knows is newer).
func (s *InfluxStore) sync(ctx context.Context) error {
	s.mu.Lock()
	s.lastSync = time.Now()
	s.mu.Unlock()
	res, err := s.c.one(ctx, "SELECT * FROM "+s.c.from(measSteps)+" GROUP BY "+quoteIdent(tagApp)+" ORDER BY time DESC LIMIT 1")
	if err != nil {
		return err
	}
	var last []spooled
	for _, ser := range res.Series {
		app := ser.Tags[tagApp]
		if app == "" || len(ser.Values) == 0 {
			continue
		}
		r := row{cols: newColumns(ser.Columns), vals: ser.Values[0]}
		st := parseStep(app, &r)
		if r.err != nil {
			return fmt.Errorf("InfluxDB %s: last step of %q: %w", s.c.base, app, r.err)
		}
		last = append(last, st)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range last {
		if s.tr.apps[last[i].App] == nil {
			s.remember(&last[i])
		}
	}
	s.synced = true
	return nil
}

// Append implements Store. It returns once the steps are validated and
// buffered; it waits only when WithMaxBuffered steps are buffered already.
func (s *InfluxStore) Append(ctx context.Context, steps ...Step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if len(steps) == 0 {
		return nil
	}
	if err := s.checkUnknown(ctx, steps); err != nil {
		return err
	}
	for len(s.pending) > 0 && len(s.pending)+len(steps) > s.opts.maxBuffered {
		room := s.room
		s.mu.Unlock()
		s.kickFlusher()
		select {
		case <-room:
		case <-ctx.Done():
			s.mu.Lock()
			return fmt.Errorf("trajectory: waiting for room in the buffer (%d steps): %w", s.opts.maxBuffered, ctx.Err())
		case <-s.done:
		}
		s.mu.Lock()
		if s.closed {
			return ErrClosed
		}
	}
	plan, err := s.tr.plan(steps)
	if err != nil {
		return err
	}
	sts := make([]spooled, len(steps))
	for i := range steps {
		sts[i] = spooled{Step: normalized(&steps[i]), epReward: plan[i].meta.reward, epStart: plan[i].meta.start}
	}
	// On disk before Append returns: a killed process loses no step
	// (see journal).
	if err := s.jr.write(sts); err != nil {
		return err
	}
	for i := range sts {
		s.remember(&sts[i])
	}
	s.pending = append(s.pending, sts...)
	if len(s.pending) >= s.opts.batchSize {
		s.kickFlusher()
	}
	return nil
}

// checkUnknown handles steps of applications the tracker does not know
// while InfluxDB's state is unread: it tries to read it (at most once per
// syncRetry), and if that fails refuses steps that continue an episode.
// s.mu is held (and released while reading).
func (s *InfluxStore) checkUnknown(ctx context.Context, steps []Step) error {
	if s.synced {
		return nil
	}
	unknown := func() *Step {
		seen := map[string]bool{}
		for i := range steps {
			st := &steps[i]
			if seen[st.App] {
				continue
			}
			seen[st.App] = true
			if s.tr.apps[st.App] == nil && st.T > 0 {
				return st
			}
		}
		return nil
	}
	if unknown() == nil {
		return nil
	}
	var serr error = errors.New("not tried within " + syncRetry.String())
	if time.Since(s.lastSync) >= syncRetry {
		s.mu.Unlock()
		serr = s.sync(ctx)
		s.mu.Lock()
		if s.closed {
			return ErrClosed
		}
	}
	if st := unknown(); st != nil && !s.synced {
		return fmt.Errorf("trajectory: app %q episode %d step %d continues an episode this store has not seen, and InfluxDB's record of it cannot be read: %w: %w",
			st.App, st.Episode, st.T, ErrUnavailable, serr)
	}
	return nil
}

func (s *InfluxStore) kickFlusher() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// signalRoom wakes Appends waiting for buffer space; s.mu is held.
func (s *InfluxStore) signalRoom() {
	close(s.room)
	s.room = make(chan struct{})
}

// round modes: what started a delivery round.
type roundMode int

const (
	roundKick  roundMode = iota // a full batch is buffered: send full batches
	roundTick                   // the flush interval passed: send everything
	roundForce                  // Flush, a read or Close: send everything now, ignoring the backoff
)

// run is the flusher goroutine.
func (s *InfluxStore) run() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.flushInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			if s.backoff > 0 {
				// InfluxDB was down at the last attempt: do not hold
				// Close up on it; the spool keeps everything.
				s.spoolPending()
			} else {
				s.round(context.Background(), roundForce)
				s.forced.Add(1)
			}
			// Flush calls queued before Close: their steps went with
			// that round or to the spool.
			s.answer(s.queued(nil), s.flushResult())
			return
		case req := <-s.reqs:
			// Every caller queued now shares this round: their steps
			// were appended before they called Flush. The round
			// outlives a caller that stops waiting: a batch is either
			// sent or spooled, never abandoned half-way.
			reqs := s.queued([]flushReq{req})
			s.round(context.WithoutCancel(req.ctx), roundForce)
			s.forced.Add(1)
			s.answer(reqs, s.flushResult())
		case <-s.kick:
			s.round(context.Background(), roundKick)
		case <-tick.C:
			s.round(context.Background(), roundTick)
		}
	}
}

// queued appends the Flush requests waiting in the queue to reqs.
func (s *InfluxStore) queued(reqs []flushReq) []flushReq {
	for {
		select {
		case r := <-s.reqs:
			reqs = append(reqs, r)
		default:
			return reqs
		}
	}
}

// answer replies err to every request of reqs (their reply channels have
// room for it).
func (s *InfluxStore) answer(reqs []flushReq, err error) {
	for _, r := range reqs {
		r.reply <- err
	}
}

// round delivers the spool and the buffer, or, while InfluxDB is
// unreachable and the backoff has not expired, spools the buffer.
func (s *InfluxStore) round(ctx context.Context, mode roundMode) {
	if s.backoff > 0 && mode != roundForce && time.Now().Before(s.nextTry) {
		s.spoolPending()
		return
	}
	err := s.deliver(ctx, mode == roundKick)
	s.mu.Lock()
	wasDown := s.unreachable
	s.unreachable = err != nil
	if err != nil {
		s.lastErr = err
	}
	s.mu.Unlock()
	if err != nil {
		if s.backoff == 0 {
			s.backoff = s.opts.retryMin
		} else {
			s.backoff = min(2*s.backoff, s.opts.retryMax)
		}
		s.nextTry = time.Now().Add(s.backoff)
		if !wasDown {
			s.log.Warn("InfluxDB unreachable; spooling trajectory steps locally", "err", err, "retry_in", s.backoff)
		}
		s.spoolPending()
		return
	}
	if wasDown {
		s.log.Info("InfluxDB reachable again; spooled trajectory steps delivered")
	}
	s.backoff = 0
}

// deliver sends the spool, then the buffer (only full batches of it if
// fullOnly), in batches, stopping at the first failure worth retrying.
func (s *InfluxStore) deliver(ctx context.Context, fullOnly bool) error {
	if !s.dbReady {
		if err := s.ensureDB(ctx); err != nil {
			return err
		}
		s.dbReady = true
	}
	s.mu.Lock()
	synced := s.synced
	s.mu.Unlock()
	if !synced {
		if err := s.sync(ctx); err != nil {
			level := slog.LevelDebug
			if !s.syncWarned {
				level, s.syncWarned = slog.LevelWarn, true
			}
			s.log.Log(ctx, level, "InfluxDB: cannot read the applications' last steps", "err", err)
		}
	}
	for s.sp.count > 0 {
		batch, pos, err := s.sp.peek(s.opts.batchSize)
		if err != nil {
			s.log.Error("trajectory spool: cannot read", "err", err)
			return err
		}
		if len(batch) == 0 {
			break
		}
		if err := s.send(ctx, batch); err != nil {
			return err
		}
		if err := s.sp.ack(pos, len(batch)); err != nil {
			s.log.Error("trajectory spool", "err", err)
		}
		s.mu.Lock()
		s.spooledN = s.sp.count
		s.mu.Unlock()
	}
	for {
		s.mu.Lock()
		n := min(len(s.pending), s.opts.batchSize)
		if n == 0 || (fullOnly && n < s.opts.batchSize) {
			s.mu.Unlock()
			return nil
		}
		batch := s.pending[:n:n]
		s.pending = s.pending[n:]
		if len(s.pending) == 0 {
			s.pending = nil
		}
		s.inflight = n
		s.signalRoom()
		s.mu.Unlock()
		err := s.send(ctx, batch)
		s.mu.Lock()
		s.inflight = 0
		if err != nil {
			s.pending = append(batch, s.pending...)
		} else {
			s.release(batch)
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// send writes one batch. A refusal that retrying cannot fix is kept in the
// dead-letter file and recorded, and counts as sent.
func (s *InfluxStore) send(ctx context.Context, batch []spooled) error {
	var body []byte
	for i := range batch {
		body = appendLines(body, &batch[i])
	}
	err := s.c.write(ctx, body)
	if err == nil {
		return nil
	}
	if retryable(err) {
		if isDatabaseNotFound(err) {
			s.dbReady = false
		}
		return err
	}
	first, last := &batch[0], &batch[len(batch)-1]
	rerr := fmt.Errorf("%d steps from app %q episode %d step %d to app %q episode %d step %d: %w",
		len(batch), first.App, first.Episode, first.T, last.App, last.Episode, last.T, err)
	if derr := s.sp.reject(body, err); derr != nil {
		rerr = fmt.Errorf("%w (and saving them to %s failed: %w)", rerr, rejectedFile, derr)
	}
	s.log.Error("InfluxDB refused a batch of trajectory steps; kept in "+rejectedFile, "err", rerr)
	s.mu.Lock()
	s.rejected = append(s.rejected, rerr)
	s.rejectedN++
	s.mu.Unlock()
	return nil
}

// spoolPending moves the buffer to the spool.
func (s *InfluxStore) spoolPending() {
	s.mu.Lock()
	batch := s.pending
	s.pending = nil
	if len(batch) > 0 {
		s.signalRoom()
	}
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := s.sp.append(batch)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.pending = append(batch, s.pending...)
		if s.spoolErr == nil {
			s.log.Error("trajectory spool: cannot write; steps stay in memory", "err", err, "steps", len(s.pending))
		}
		s.spoolErr = err
		return
	}
	s.spoolErr = nil
	s.spooledN = s.sp.count
	s.release(batch)
}

// release tells the journal that batch is in InfluxDB or the spool; s.mu
// is held.
func (s *InfluxStore) release(batch []spooled) {
	if err := s.jr.release(batch); err != nil {
		s.log.Warn("trajectory journal: a delivered segment stays; the next open delivers it again", "err", err)
	}
}

// flushResult reports, after a forced round, what is not in InfluxDB.
func (s *InfluxStore) flushResult() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.spoolErr != nil {
		errs = append(errs, fmt.Errorf("trajectory: %d steps could not be spooled to %s and are held in memory only: %w",
			len(s.pending), s.dir, s.spoolErr))
	}
	if len(s.rejected) > 0 {
		errs = append(errs, fmt.Errorf("%w (kept in %s): %w", ErrRejected, rejectedFile, errors.Join(s.rejected...)))
		s.rejected = nil
	}
	if s.spooledN > 0 {
		errs = append(errs, fmt.Errorf("%w: %d steps in %s await delivery: %w", ErrSpooled, s.spooledN, s.dir, s.lastErr))
	}
	return errors.Join(errs...)
}

// Flush implements Store: it sends everything buffered and spooled now,
// ignoring the backoff, and returns nil if all of it reached InfluxDB.
// Otherwise the error matches ErrSpooled when steps wait, durably, in the
// spool (InfluxDB unreachable; with ErrUnavailable when that was the
// cause), ErrRejected when InfluxDB refused a batch since the last Flush,
// or neither when the spool itself could not be written.
func (s *InfluxStore) Flush(ctx context.Context) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	req := flushReq{ctx: ctx, reply: make(chan error, 1)}
	select {
	case s.reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return ErrClosed
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		// Queued as the flusher was closing: answered if it saw the
		// request, else closed.
		select {
		case err := <-req.reply:
			return err
		default:
			return ErrClosed
		}
	}
}

// Status reports the delivery state without waiting.
func (s *InfluxStore) Status() InfluxStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return InfluxStatus{Buffered: len(s.pending) + s.inflight, Spooled: s.spooledN, Unreachable: s.unreachable,
		LastError: s.lastErr, Rejected: s.rejectedN}
}

// beforeRead delivers what is buffered or spooled so that a read sees it;
// if that fails the read runs anyway (and fails too if InfluxDB is down).
func (s *InfluxStore) beforeRead(ctx context.Context) error {
	s.mu.Lock()
	closed, busy := s.closed, len(s.pending)+s.inflight+s.spooledN > 0
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if busy {
		if err := s.Flush(ctx); errors.Is(err, ErrClosed) || ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
	}
	return nil
}

// RecentEpisodes implements Store.
func (s *InfluxStore) RecentEpisodes(ctx context.Context, app string, n int) ([]Episode, error) {
	if err := checkCount("n", n); err != nil {
		return nil, err
	}
	if err := s.beforeRead(ctx); err != nil {
		return nil, err
	}
	if n == 0 || checkName(app) != "" {
		return nil, nil
	}
	eps, err := s.episodes(ctx, app, " ORDER BY time DESC LIMIT "+strconv.Itoa(n))
	if err != nil {
		return nil, err
	}
	slices.Reverse(eps)
	out := make([]Episode, len(eps))
	for i, m := range eps {
		out[i] = m.toEpisode(app)
	}
	return out, nil
}

// episodes reads episode summaries of app.
func (s *InfluxStore) episodes(ctx context.Context, app, suffix string) ([]meta, error) {
	q := `SELECT "episode","reward","steps","start" FROM ` + s.c.from(measEpisodes) +
		" WHERE " + quoteIdent(tagApp) + " = " + quoteString(app) + suffix
	res, err := s.c.one(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("trajectory: episodes of %q: %w", app, err)
	}
	var out []meta
	for _, ser := range res.Series {
		cols := newColumns(ser.Columns)
		for _, vals := range ser.Values {
			r := row{cols: cols, vals: vals}
			m := meta{episode: r.int("episode"), reward: r.float("reward"), steps: int32(r.int("steps")),
				start: r.int("start"), end: r.int("time"), done: true}
			if r.err != nil {
				return nil, fmt.Errorf("trajectory: InfluxDB %s: episodes of %q: %w", s.c.base, app, r.err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// Top implements Store. It reads all episode summaries of app, picks the
// best m here (so that ties break as in the other stores), and reads their
// steps in one request.
func (s *InfluxStore) Top(ctx context.Context, app string, m int) ([]Trajectory, error) {
	if err := checkCount("m", m); err != nil {
		return nil, err
	}
	if err := s.beforeRead(ctx); err != nil {
		return nil, err
	}
	if m == 0 || checkName(app) != "" {
		return nil, nil
	}
	eps, err := s.episodes(ctx, app, "")
	if err != nil {
		return nil, err
	}
	slices.SortFunc(eps, compareEpisodes)
	eps = eps[:min(m, len(eps))]
	if len(eps) == 0 {
		return nil, nil
	}
	var q strings.Builder
	for i, e := range eps {
		if i > 0 {
			q.WriteString("; ")
		}
		fmt.Fprintf(&q, "SELECT * FROM %s WHERE %s = %s AND time >= %d AND time <= %d", s.c.from(measSteps),
			quoteIdent(tagApp), quoteString(app), e.start, e.end)
	}
	res, err := s.c.query(ctx, q.String(), true)
	if err != nil {
		return nil, fmt.Errorf("trajectory: top episodes of %q: %w", app, err)
	}
	if len(res) != len(eps) {
		return nil, fmt.Errorf("trajectory: InfluxDB %s: top episodes of %q: %d results for %d statements", s.c.base, app, len(res), len(eps))
	}
	out := make([]Trajectory, len(eps))
	for i, e := range eps {
		if res[i].Error != "" {
			return nil, fmt.Errorf("trajectory: InfluxDB %s: steps of %q episode %d: %w", s.c.base, app, e.episode, &statementError{res[i].Error})
		}
		steps, err := s.rowsToSteps(app, res[i].Series)
		if err != nil {
			return nil, err
		}
		steps = slices.DeleteFunc(steps, func(st Step) bool { return st.Episode != e.episode })
		if len(steps) != int(e.steps) {
			s.log.Warn("InfluxDB holds fewer steps of an episode than its summary counts (see rejected.lp)",
				"app", app, "episode", e.episode, "steps", len(steps), "want", e.steps)
		}
		out[i] = Trajectory{Episode: e.toEpisode(app), Steps: steps}
	}
	return out, nil
}

// rowsToSteps converts steps rows.
//
// The newest rows of a series may lack fields: InfluxDB stores each field
// apart, and a query concurrent with the write of a point can see some of
// its fields and not others. Such rows at a series' end are left out (the
// next read sees them whole); a row lacking fields before a whole one is an
// error.
func (s *InfluxStore) rowsToSteps(app string, series []querySeries) ([]Step, error) {
	var out []Step
	for _, ser := range series {
		cols := newColumns(ser.Columns)
		var partial error // the first row lacking fields, while only such rows follow it
		for _, vals := range ser.Values {
			r := row{cols: cols, vals: vals}
			st := parseStep(app, &r)
			if r.err == nil && partial != nil {
				r.err = partial
			}
			if r.missing && r.err != nil {
				partial = cmp.Or(partial, r.err)
				continue
			}
			if r.err != nil {
				return nil, fmt.Errorf("trajectory: InfluxDB %s: step of %q: %w", s.c.base, app, r.err)
			}
			out = append(out, st.Step)
		}
	}
	return out, nil
}

// Range implements Store.
func (s *InfluxStore) Range(ctx context.Context, app string, from, to time.Time) ([]Trajectory, error) {
	if err := checkRange(from, to); err != nil {
		return nil, err
	}
	if err := s.beforeRead(ctx); err != nil {
		return nil, err
	}
	lo, hi := max(rangeNanos(from), minNanos), min(rangeNanos(to), maxNanos)
	if lo >= hi || checkName(app) != "" {
		return nil, nil
	}
	q := fmt.Sprintf("SELECT * FROM %s WHERE %s = %s AND time >= %d AND time < %d", s.c.from(measSteps),
		quoteIdent(tagApp), quoteString(app), lo, hi)
	res, err := s.c.one(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("trajectory: range of %q: %w", app, err)
	}
	steps, err := s.rowsToSteps(app, res.Series)
	if err != nil {
		return nil, err
	}
	var out []Trajectory
	for i := 0; i < len(steps); {
		j := i + 1
		for j < len(steps) && steps[j].Episode == steps[i].Episode {
			j++
		}
		out = append(out, summarize(app, steps[i:j:j]))
		i = j
	}
	return out, nil
}

// Apps implements Store.
func (s *InfluxStore) Apps(ctx context.Context) ([]string, error) {
	if err := s.beforeRead(ctx); err != nil {
		return nil, err
	}
	res, err := s.c.one(ctx, "SHOW TAG VALUES FROM "+s.c.from(measSteps)+" WITH KEY = "+quoteIdent(tagApp))
	if err != nil {
		return nil, fmt.Errorf("trajectory: applications: %w", err)
	}
	var out []string
	for _, ser := range res.Series {
		cols := newColumns(ser.Columns)
		for _, vals := range ser.Values {
			r := row{cols: cols, vals: vals}
			if v := r.string("value"); v != "" {
				out = append(out, v)
			}
			if r.err != nil {
				return nil, fmt.Errorf("trajectory: InfluxDB %s: applications: %w", s.c.base, r.err)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Close implements Store: a last delivery attempt, then what is left goes
// to the spool for the next open (logged); the error reports only steps
// that could be neither delivered nor spooled.
func (s *InfluxStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	s.spoolPending()
	s.mu.Lock()
	lost, spoolErr, spooled := len(s.pending), s.spoolErr, s.spooledN
	held, jerr := s.jr.close()
	s.mu.Unlock()
	err := errors.Join(s.sp.close(), jerr)
	if spooled > 0 {
		s.log.Info("trajectory spool: steps await delivery at the next open", "steps", spooled)
	}
	if lost > 0 {
		err = errors.Join(fmt.Errorf("trajectory: %d steps could be neither delivered to InfluxDB nor spooled to %s (%d are in its journal, moved to the spool at the next open): %w",
			lost, s.dir, held, spoolErr), err)
	}
	if uerr := unlockDir(s.lock); err == nil {
		err = uerr
	}
	return err
}
