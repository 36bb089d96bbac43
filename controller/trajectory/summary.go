package trajectory

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// sumMagic starts a segment summary (format version 2; version 1, which
// lacked the first segment of each episode, is rescanned and rewritten).
const (
	sumMagic   = "AWTRJS\x00\x02"
	sumMagicV1 = "AWTRJS\x00\x01"
)

// A segment summary (seg-N.sum, written when segment N is sealed) lists,
// for every episode with steps in the segment, the episode's index entry
// as it stood at the end of the segment:
//
//	magic
//	uvarint count
//	count × { app (uvarint length, bytes), uvarint state dims, uvarint
//	  action dims, varint episode, varint start, varint end, float64
//	  reward, uvarint steps, byte done, uvarint offset, uvarint size of the
//	  episode's last record in segment N, uvarint segment of its first
//	  record }
//	uint32 LE CRC-32C of everything before
//
// Applying the summaries of segments 1..N in order gives the index that
// scanning them would give, so opening a store reads the summaries of
// sealed segments and scans only what has none.
func sumPath(dir string, id uint32) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%010d.sum", segPrefix, id))
}

type sumEntry struct {
	app                 string
	stateDim, actionDim int
	e                   entry[chain]
}

// writeSummary writes the summary of sealed segment id, whose touched
// episodes are given, atomically (temporary file, fsync, rename).
func (s *FileStore) writeSummary(id uint32, touched map[epKey]struct{}) error {
	var ents []sumEntry
	for k := range touched {
		a := s.ix.apps[k.app]
		if a == nil {
			continue
		}
		for i := len(a.eps) - 1; i >= 0; i-- {
			if a.eps[i].episode == k.episode {
				ents = append(ents, sumEntry{app: k.app, stateDim: a.stateDim, actionDim: a.actionDim, e: a.eps[i]})
				break
			}
		}
	}
	slices.SortFunc(ents, func(x, y sumEntry) int {
		if c := cmp.Compare(x.app, y.app); c != 0 {
			return c
		}
		return cmp.Compare(x.e.episode, y.e.episode)
	})
	b := []byte(sumMagic)
	b = binary.AppendUvarint(b, uint64(len(ents)))
	for _, se := range ents {
		e := se.e
		if e.data.last.seg != id {
			return fmt.Errorf("summary of segment %d: episode %d of %q ends in segment %d", id, e.episode, se.app, e.data.last.seg)
		}
		b = binary.AppendUvarint(b, uint64(len(se.app)))
		b = append(b, se.app...)
		b = binary.AppendUvarint(b, uint64(se.stateDim))
		b = binary.AppendUvarint(b, uint64(se.actionDim))
		b = binary.AppendVarint(b, e.episode)
		b = binary.AppendVarint(b, e.start)
		b = binary.AppendVarint(b, e.end)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.reward))
		b = binary.AppendUvarint(b, uint64(e.steps))
		if e.done {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.AppendUvarint(b, uint64(e.data.last.off))
		b = binary.AppendUvarint(b, uint64(e.data.last.size))
		b = binary.AppendUvarint(b, uint64(e.data.first))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return atomicfile.Write(sumPath(s.dir, id), b, 0o644)
}

// loadSummary applies the summary of sealed segment id to the index and
// returns the episodes it touched; a missing, damaged or inconsistent
// summary is left alone (with a warning unless missing or of the older
// format) for the caller to scan the segment instead. Episodes that began
// in a segment retention removed are remnants, not indexed.
func (s *FileStore) loadSummary(id uint32, ld *loading) (map[epKey]struct{}, bool) {
	path := sumPath(s.dir, id)
	b, err := os.ReadFile(path)
	if err != nil {
		if !os.IsNotExist(err) {
			s.log.Warn("trajectory log: cannot read segment summary; rescanning the segment", "path", path, "err", err)
		}
		return nil, false
	}
	if len(b) >= len(sumMagicV1) && string(b[:len(sumMagicV1)]) == sumMagicV1 {
		return nil, false
	}
	ents, err := decodeSummary(b, id)
	if err == nil {
		ents = slices.DeleteFunc(ents, func(se sumEntry) bool {
			key := epKey{se.app, se.e.episode}
			if se.e.data.first < ld.firstLive {
				ld.remnants[key] = struct{}{}
				return true
			}
			delete(ld.remnants, key)
			return false
		})
		err = s.checkSummary(ents)
	}
	if err != nil {
		s.log.Warn("trajectory log: bad segment summary; rescanning the segment", "path", path, "err", err)
		return nil, false
	}
	touched := make(map[epKey]struct{}, len(ents))
	for _, se := range ents {
		touched[epKey{se.app, se.e.episode}] = struct{}{}
		s.newest = max(s.newest, se.e.end)
		a := s.ix.apps[se.app]
		if a == nil {
			a = &appIndex[chain]{stateDim: se.stateDim, actionDim: se.actionDim}
			s.ix.apps[se.app] = a
		}
		if n := len(a.eps); n > 0 && a.eps[n-1].episode == se.e.episode {
			a.eps[n-1] = se.e
		} else {
			a.eps = append(a.eps, se.e)
		}
	}
	return touched, true
}

func decodeSummary(b []byte, id uint32) ([]sumEntry, error) {
	if len(b) < len(sumMagic)+4 || string(b[:len(sumMagic)]) != sumMagic {
		return nil, fmt.Errorf("%w: not a segment summary", ErrCorrupt)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	d := decoder{b: body[len(sumMagic):]}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrCorrupt, n, len(d.b))
	}
	ents := make([]sumEntry, 0, n)
	for range n {
		var se sumEntry
		se.app = string(d.bytes(d.uvarint()))
		se.stateDim = int(d.uvarint())
		se.actionDim = int(d.uvarint())
		se.e.episode = d.varint()
		se.e.start = d.varint()
		se.e.end = d.varint()
		se.e.reward = d.float()
		se.e.steps = int32(d.uvarint())
		done := d.bytes(1)
		se.e.done = len(done) == 1 && done[0] == 1
		se.e.data.last = loc{seg: id, off: int64(d.uvarint()), size: uint32(d.uvarint())}
		first := d.uvarint()
		if d.err == nil && (first == 0 || first > uint64(id)) {
			return nil, fmt.Errorf("%w: episode %d of %q begins in segment %d, not in 1 to %d", ErrCorrupt, se.e.episode, se.app, first, id)
		}
		se.e.data.first = uint32(first)
		if d.err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, d.err)
		}
		ents = append(ents, se)
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the entries", ErrCorrupt, len(d.b))
	}
	return ents, nil
}

// checkSummary verifies that the entries continue the index: per app in
// increasing episode order, none before the app's last indexed episode,
// with the app's dimensions.
func (s *FileStore) checkSummary(ents []sumEntry) error {
	for i, se := range ents {
		if se.e.steps < 1 || se.e.data.last.off < segHeader {
			return fmt.Errorf("%w: entry %d (app %q episode %d) is empty", ErrCorrupt, i, se.app, se.e.episode)
		}
		if i > 0 && ents[i-1].app == se.app {
			if se.e.episode <= ents[i-1].e.episode {
				return fmt.Errorf("%w: entry %d: episodes of %q out of order", ErrCorrupt, i, se.app)
			}
			continue
		}
		a := s.ix.apps[se.app]
		if a == nil {
			continue
		}
		if a.stateDim != se.stateDim || a.actionDim != se.actionDim {
			return fmt.Errorf("%w: entry %d: dimensions of %q differ from the index", ErrCorrupt, i, se.app)
		}
		if n := len(a.eps); n > 0 && se.e.episode < a.eps[n-1].episode {
			return fmt.Errorf("%w: entry %d: episode %d of %q precedes indexed episode %d", ErrCorrupt, i, se.e.episode, se.app, a.eps[n-1].episode)
		}
	}
	return nil
}
