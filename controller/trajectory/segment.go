package trajectory

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// segMagic starts every segment file (format version 1).
const segMagic = "AWTRJ\x00\x00\x01"

// segHeader is the offset of a segment's first record.
const segHeader = int64(len(segMagic))

// segPath returns the path of segment id with the given prefix ("seg" for
// FileStore, "spool" for InfluxStore).
func segPath(dir, prefix string, id uint32) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%010d.log", prefix, id))
}

// listSegments returns the ids of dir's segments with prefix, ascending.
func listSegments(dir, prefix string) ([]uint32, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []uint32
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), prefix+"-")
		if !ok {
			continue
		}
		num, ok := strings.CutSuffix(name, ".log")
		if !ok || len(num) != 10 {
			continue
		}
		id, err := strconv.ParseUint(num, 10, 32)
		if err != nil || id == 0 {
			continue
		}
		ids = append(ids, uint32(id))
	}
	slices.Sort(ids)
	return ids, nil
}

// tornError describes where and why a segment's valid records end early.
type tornError struct {
	off    int64 // offset of the first byte not part of a valid record
	size   int64 // file size
	reason string
}

func (e *tornError) Error() string {
	return fmt.Sprintf("%s at offset %d (%d bytes to the end of the file)", e.reason, e.off, e.size-e.off)
}

// scanSegment reads the records of the open segment f in order, calling fn
// with each record's location and payload (valid until fn returns). It
// returns the offset after the last valid record and, if the file goes on
// after it with a short or corrupt record, a *tornError. An error from fn
// or from reading ends the scan and is returned as err. A file shorter than
// the magic is torn at 0.
func scanSegment(f *os.File, id uint32, fn func(l loc, payload []byte) error) (end int64, torn *tornError, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, nil, err
	}
	size := st.Size()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, nil, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, segHeader)
	if _, err := io.ReadFull(r, magic); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, &tornError{off: 0, size: size, reason: "segment header cut short"}, nil
		}
		return 0, nil, err
	}
	if string(magic) != segMagic {
		return 0, nil, fmt.Errorf("%w: %s is not a trajectory segment (magic %q)", ErrCorrupt, f.Name(), magic)
	}
	off := segHeader
	var hdr [headerSize]byte
	var payload []byte
	for off < size {
		if size-off < headerSize {
			return off, &tornError{off: off, size: size, reason: "record header cut short"}, nil
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return off, nil, err
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:]))
		if n > maxPayload {
			return off, &tornError{off: off, size: size, reason: fmt.Sprintf("record length %d out of range", n)}, nil
		}
		if size-off-headerSize < n {
			return off, &tornError{off: off, size: size, reason: "record cut short"}, nil
		}
		if int64(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			return off, nil, err
		}
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
			return off, &tornError{off: off, size: size, reason: "record checksum mismatch"}, nil
		}
		l := loc{seg: id, off: off, size: uint32(headerSize + n)}
		if err := fn(l, payload); err != nil {
			return off, nil, err
		}
		off += headerSize + n
	}
	return off, nil, nil
}

// segWriter appends records to a segment.
type segWriter struct {
	f      *os.File
	id     uint32
	size   int64
	broken error // a failed write could not be cut back: the tail is unknown
}

// createSegment creates segment id, writes its magic and syncs it and dir.
func createSegment(dir, prefix string, id uint32) (*segWriter, error) {
	path := segPath(dir, prefix, id)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	w := &segWriter{f: f, id: id}
	if err := w.reset(); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// openSegmentWriter opens segment id to append after its valid prefix end
// (from a scan), truncating anything after it.
func openSegmentWriter(dir, prefix string, id uint32, end int64) (*segWriter, error) {
	f, err := os.OpenFile(segPath(dir, prefix, id), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	w := &segWriter{f: f, id: id, size: end}
	if end < segHeader {
		err = w.reset()
	} else {
		err = w.truncate(end)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// reset makes the segment empty: just its magic, synced.
func (w *segWriter) reset() error {
	if err := w.f.Truncate(0); err != nil {
		return fmt.Errorf("reset segment %s: %w", w.f.Name(), err)
	}
	if _, err := w.f.WriteAt([]byte(segMagic), 0); err != nil {
		return fmt.Errorf("reset segment %s: %w", w.f.Name(), err)
	}
	w.size = segHeader
	return w.sync()
}

// truncate cuts the segment at end and syncs it.
func (w *segWriter) truncate(end int64) error {
	if err := w.f.Truncate(end); err != nil {
		return fmt.Errorf("truncate segment %s at %d: %w", w.f.Name(), end, err)
	}
	w.size = end
	return w.sync()
}

// write appends buf; on failure it cuts the segment back to its previous
// end so that no partial record stays, and reports whether that worked.
func (w *segWriter) write(buf []byte) error {
	if _, err := w.f.WriteAt(buf, w.size); err != nil {
		if terr := w.f.Truncate(w.size); terr != nil {
			w.broken = fmt.Errorf("write segment %s: %w (and cutting the partial write failed: %w)", w.f.Name(), err, terr)
			return w.broken
		}
		return fmt.Errorf("write segment %s: %w", w.f.Name(), err)
	}
	w.size += int64(len(buf))
	return nil
}

func (w *segWriter) sync() error {
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync segment %s: %w", w.f.Name(), err)
	}
	return nil
}

func (w *segWriter) close() error { return w.f.Close() }

// syncDir fsyncs a directory so that created, renamed and removed entries
// are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// readRecord reads the record at l from f into *buf (grown as needed) and
// returns its payload.
func readRecord(f *os.File, l loc, bufp *[]byte) ([]byte, error) {
	if cap(*bufp) < int(l.size) {
		*bufp = make([]byte, l.size)
	}
	buf := (*bufp)[:l.size]
	if _, err := f.ReadAt(buf, l.off); err != nil {
		return nil, fmt.Errorf("read %s at offset %d: %w", f.Name(), l.off, err)
	}
	payload, err := checkFrame(buf)
	if err != nil {
		return nil, fmt.Errorf("%s at offset %d: %w", f.Name(), l.off, err)
	}
	return payload, nil
}
