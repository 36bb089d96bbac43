package trajectory

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// journalPrefix names InfluxStore's journal segments
// (journal-0000000001.log, …) in the spool directory.
const journalPrefix = "journal"

// journalSegmentMax is the size at which the journal starts a new
// segment, so that segments whose steps all left the buffer are removed
// while steps keep arriving.
const journalSegmentMax = 4 << 20

// journal keeps every step InfluxStore accepts on local disk from the
// moment Append returns until the step is in InfluxDB or in the spool.
// The buffer in memory is lost when the process is killed; the journal is
// not: it is written (without fsync, so one write per Append) before
// Append returns, and the kernel keeps the bytes of a killed process. Open
// moves what the journal holds to the spool, whence it is delivered again
// (InfluxDB absorbs steps it already has: same series and timestamps
// overwrite identical points). A machine crash can still lose the steps
// written since the kernel last flushed them.
//
// Steps record their segment (spooled.jseg); release counts them off, and
// a segment whose steps have all left the buffer is removed (the current
// one is emptied instead). InfluxStore uses a journal under its mutex.
type journal struct {
	dir     string
	segSize int64
	tail    *segWriter
	next    uint32         // id of the next segment to create
	open    map[uint32]int // per segment, steps not yet delivered or spooled
}

// openJournal reads what the journal segments in dir hold, in order, and
// returns the steps with the ids of their segments; removeJournal deletes
// those once the steps are safe elsewhere. Torn or corrupt tails (a write
// cut by a machine crash) are logged and skipped.
func openJournal(dir string, log *slog.Logger, segSize int64) (*journal, []spooled, []uint32, error) {
	j := &journal{dir: dir, segSize: min(segSize, journalSegmentMax), next: 1, open: map[uint32]int{}}
	ids, err := listSegments(dir, journalPrefix)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(ids) > 0 {
		j.next = ids[len(ids)-1] + 1
	}
	var (
		steps []spooled
		r     record
	)
	for _, id := range ids {
		path := segPath(dir, journalPrefix, id)
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, nil, err
		}
		_, torn, err := scanSegment(f, id, func(l loc, payload []byte) error {
			if err := decodeRecord(payload, recSpool, &r); err != nil {
				return fmt.Errorf("journal %s offset %d: %w", path, l.off, err)
			}
			steps = append(steps, spooled{Step: normalized(&r.step), epReward: r.epReward, epStart: r.epStart})
			return nil
		})
		f.Close()
		if err != nil {
			return nil, nil, nil, err
		}
		if torn != nil {
			log.Warn("trajectory journal: skipping a torn or corrupt tail left by an interrupted write",
				"segment", path, "detail", torn.Error(), "bytes_skipped", torn.size-torn.off)
		}
	}
	return j, steps, ids, nil
}

// removeJournal deletes the journal segments ids of dir.
func removeJournal(dir string, ids []uint32) error {
	for _, id := range ids {
		if err := os.Remove(segPath(dir, journalPrefix, id)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("trajectory journal: %w", err)
		}
	}
	if len(ids) > 0 {
		return syncDir(dir)
	}
	return nil
}

// write appends steps to the journal, setting their jseg.
func (j *journal) write(steps []spooled) error {
	if j.tail != nil && (j.tail.broken != nil || j.tail.size >= j.segSize) {
		// A broken segment (a failed write left its tail unknown) keeps
		// its steps for the next open and takes no more.
		if j.open[j.tail.id] == 0 {
			j.drop(j.tail.id)
		}
		j.tail.close()
		j.tail = nil
	}
	if j.tail == nil {
		w, err := createSegment(j.dir, journalPrefix, j.next)
		if err != nil {
			return fmt.Errorf("trajectory journal: %w", err)
		}
		j.next++
		j.tail = w
	}
	var buf []byte
	for i := range steps {
		steps[i].jseg = j.tail.id
		buf = appendSpooledStep(buf, &steps[i])
	}
	if err := j.tail.write(buf); err != nil {
		return fmt.Errorf("trajectory journal: %w", err)
	}
	j.open[j.tail.id] += len(steps)
	return nil
}

// release counts off steps that are now in InfluxDB or the spool, and
// removes or empties the segments left without steps. A failure leaves a
// segment behind, which the next open delivers again: harmless.
func (j *journal) release(steps []spooled) error {
	var errs []error
	for i := range steps {
		id := steps[i].jseg
		if id == 0 {
			continue // from the spool: not journaled
		}
		if j.open[id]--; j.open[id] > 0 {
			continue
		}
		delete(j.open, id)
		if j.tail != nil && j.tail.id == id {
			if j.tail.broken == nil && j.tail.size > segHeader {
				if err := j.tail.f.Truncate(segHeader); err != nil {
					errs = append(errs, fmt.Errorf("trajectory journal: empty %s: %w", j.tail.f.Name(), err))
					continue
				}
				j.tail.size = segHeader
			}
			continue
		}
		errs = append(errs, j.drop(id))
	}
	return errors.Join(errs...)
}

// drop removes segment id.
func (j *journal) drop(id uint32) error {
	if err := os.Remove(segPath(j.dir, journalPrefix, id)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("trajectory journal: %w", err)
	}
	return nil
}

// close closes the current segment, removing it when all its steps left
// the buffer; it reports how many journaled steps are still held.
func (j *journal) close() (held int, err error) {
	for _, n := range j.open {
		held += n
	}
	if j.tail == nil {
		return held, nil
	}
	id := j.tail.id
	err = j.tail.close()
	j.tail = nil
	if j.open[id] == 0 {
		if derr := j.drop(id); err == nil {
			err = derr
		}
	}
	return held, err
}
