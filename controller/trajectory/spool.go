package trajectory

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// spoolPrefix names InfluxStore's spool segments (spool-0000000001.log, …)
// and rejectedFile the dead-letter file of batches InfluxDB refused.
const (
	spoolPrefix  = "spool"
	rejectedFile = "rejected.lp"
)

// spoolSegmentMax caps a spool segment, so that delivered ones are removed
// soon.
const spoolSegmentMax = 16 << 20

// spooled is a step with the running summary of its episode, as
// InfluxStore buffers, spools and writes it.
type spooled struct {
	Step
	epReward float64 // sum of the episode's rewards up to this step
	epStart  int64   // Unix ns of the episode's first step
	jseg     uint32  // the journal segment holding it (0: none)
}

// spool is InfluxStore's durable queue of steps awaiting delivery: segment
// files of recSpool records, appended at the tail and consumed from the
// head; a fully delivered segment is removed. The head position lives in
// memory only: after a restart the head segment is delivered again from its
// start, which InfluxDB absorbs (same series and timestamps overwrite
// identical points). Only the flusher goroutine uses a spool after open.
type spool struct {
	dir     string
	log     *slog.Logger
	segSize int64
	ids     []uint32   // segments holding undelivered steps, ascending
	tail    *segWriter // open for appending (the last of ids), or nil
	next    uint32     // id of the next segment to create
	reader  *os.File   // open on ids[0]
	headOff int64      // delivered prefix of ids[0]
	count   int        // undelivered steps
}

// spoolPos is how far a peek read.
type spoolPos struct {
	id  uint32
	off int64
}

// openSpool opens the spool in dir, cutting torn tails, and passes every
// undelivered step to replay in order.
func openSpool(dir string, log *slog.Logger, segSize int64, replay func(*spooled)) (*spool, error) {
	sp := &spool{dir: dir, log: log, segSize: min(segSize, spoolSegmentMax), next: 1}
	ids, err := listSegments(dir, spoolPrefix)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		sp.next = ids[len(ids)-1] + 1
	}
	var r record
	for _, id := range ids {
		path := segPath(dir, spoolPrefix, id)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return nil, err
		}
		n := 0
		end, torn, err := scanSegment(f, id, func(l loc, payload []byte) error {
			if err := decodeRecord(payload, recSpool, &r); err != nil {
				return fmt.Errorf("spool %s offset %d: %w", path, l.off, err)
			}
			s := spooled{Step: normalized(&r.step), epReward: r.epReward, epStart: r.epStart}
			replay(&s)
			n++
			return nil
		})
		if err == nil && torn != nil {
			log.Warn("trajectory spool: dropping a torn or corrupt tail left by an interrupted write",
				"segment", path, "detail", torn.Error(), "bytes_dropped", torn.size-torn.off)
			if err = f.Truncate(end); err == nil {
				err = f.Sync()
			}
		}
		f.Close()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			if err := os.Remove(path); err != nil {
				return nil, err
			}
			continue
		}
		sp.ids = append(sp.ids, id)
		sp.count += n
	}
	return sp, nil
}

// append adds steps at the tail and fsyncs them.
func (sp *spool) append(steps []spooled) error {
	if len(steps) == 0 {
		return nil
	}
	if sp.tail != nil && sp.tail.broken != nil {
		return sp.tail.broken
	}
	if sp.tail == nil || sp.tail.size >= sp.segSize {
		if sp.tail != nil {
			if err := sp.tail.sync(); err != nil {
				return err
			}
			sp.tail.close()
			sp.tail = nil
		}
		w, err := createSegment(sp.dir, spoolPrefix, sp.next)
		if err != nil {
			return err
		}
		sp.next++
		sp.tail = w
		sp.ids = append(sp.ids, w.id)
	}
	var buf []byte
	for i := range steps {
		buf = appendSpooledStep(buf, &steps[i])
	}
	if err := sp.tail.write(buf); err != nil {
		return err
	}
	if err := sp.tail.sync(); err != nil {
		return err
	}
	sp.count += len(steps)
	return nil
}

// segEnd returns the end of the head segment's records.
func (sp *spool) segEnd(id uint32) (int64, error) {
	if sp.tail != nil && sp.tail.id == id {
		return sp.tail.size, nil
	}
	st, err := sp.reader.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// peek reads up to max undelivered steps from the head segment (none when
// the spool is empty).
func (sp *spool) peek(max int) ([]spooled, spoolPos, error) {
	var id uint32
	var end int64
	for {
		if len(sp.ids) == 0 {
			sp.count = 0
			return nil, spoolPos{}, nil
		}
		id = sp.ids[0]
		if sp.reader == nil {
			f, err := os.Open(segPath(sp.dir, spoolPrefix, id))
			if err != nil {
				return nil, spoolPos{}, fmt.Errorf("trajectory spool: %w", err)
			}
			sp.reader, sp.headOff = f, segHeader
		}
		var err error
		if end, err = sp.segEnd(id); err != nil {
			return nil, spoolPos{}, fmt.Errorf("trajectory spool: %w", err)
		}
		if sp.headOff < end {
			break
		}
		// Nothing left in the head segment (the tail, just emptied).
		if err := sp.ack(spoolPos{id: id, off: sp.headOff}, 0); err != nil {
			return nil, spoolPos{}, err
		}
	}
	off := sp.headOff
	var out []spooled
	var hdr [headerSize]byte
	var buf []byte
	for off < end && len(out) < max {
		if _, err := sp.reader.ReadAt(hdr[:], off); err != nil {
			return nil, spoolPos{}, fmt.Errorf("trajectory spool %s offset %d: %w", sp.reader.Name(), off, err)
		}
		size := headerSize + int64(binary.LittleEndian.Uint32(hdr[:]))
		if size > headerSize+maxPayload || off+size > end {
			return nil, spoolPos{}, fmt.Errorf("trajectory spool %s offset %d: %w: bad record length", sp.reader.Name(), off, ErrCorrupt)
		}
		payload, err := readRecord(sp.reader, loc{seg: id, off: off, size: uint32(size)}, &buf)
		if err != nil {
			return nil, spoolPos{}, fmt.Errorf("trajectory spool: %w", err)
		}
		var r record
		if err := decodeRecord(payload, recSpool, &r); err != nil {
			return nil, spoolPos{}, fmt.Errorf("trajectory spool %s offset %d: %w", sp.reader.Name(), off, err)
		}
		out = append(out, spooled{Step: r.step, epReward: r.epReward, epStart: r.epStart})
		off += size
	}
	return out, spoolPos{id: id, off: off}, nil
}

// ack marks the n steps of a peek up to pos delivered, removing the head
// segment once all of it is.
func (sp *spool) ack(pos spoolPos, n int) error {
	if len(sp.ids) == 0 || sp.ids[0] != pos.id {
		return fmt.Errorf("trajectory spool: ack of segment %d, head is %v", pos.id, sp.ids)
	}
	sp.headOff = pos.off
	sp.count -= n
	end, err := sp.segEnd(pos.id)
	if err != nil {
		return err
	}
	if sp.headOff < end {
		return nil
	}
	if sp.tail != nil && sp.tail.id == pos.id {
		sp.tail.close()
		sp.tail = nil
	}
	sp.reader.Close()
	sp.reader = nil
	sp.ids = sp.ids[1:]
	if err := os.Remove(segPath(sp.dir, spoolPrefix, pos.id)); err != nil {
		return fmt.Errorf("trajectory spool: remove delivered segment: %w", err)
	}
	return nil
}

// close syncs and closes the spool's files.
func (sp *spool) close() error {
	var err error
	if sp.tail != nil {
		err = sp.tail.sync()
		sp.tail.close()
		sp.tail = nil
	}
	if sp.reader != nil {
		sp.reader.Close()
		sp.reader = nil
	}
	return err
}

// reject appends a batch InfluxDB refused to the dead-letter file, after
// a comment line saying when and why, and fsyncs it.
func (sp *spool) reject(body []byte, why error) error {
	path := filepath.Join(sp.dir, rejectedFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "# %s rejected: %s\n", time.Now().UTC().Format(time.RFC3339Nano), oneLine(why.Error()))
	if err == nil {
		_, err = f.Write(body)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}
