package trajectory

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Records, as FileStore's segments and InfluxStore's spool hold them:
//
//	uint32 LE  length of the payload
//	uint32 LE  CRC-32C (Castagnoli) of the payload
//	payload    type byte, then the body
//
// A step body is
//
//	app        uvarint length, bytes
//	episode    varint
//	t          uvarint
//	time       varint, Unix ns
//	reward     float64 bits, LE
//	flags      byte (bit 0: done)
//	stage      uvarint length, bytes
//	state      uvarint n, n float64 bits LE
//	action     uvarint n, n float64 bits LE
//
// followed, in a stored step (recStep, FileStore), by the location of the
// previous step of the same episode (uvarint segment, 0 for none; uvarint
// offset; uvarint record size), and in a spooled step (recSpool,
// InfluxStore) by the episode's cumulative reward (float64 bits) and start
// (varint Unix ns).
const (
	recStep  byte = 1
	recSpool byte = 2
)

// headerSize is the size of a record header.
const headerSize = 8

// maxPayload bounds a record; a larger length in a header is corruption.
const maxPayload = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// loc is where a record lies: its segment (from 1), offset and total size
// (header included).
type loc struct {
	seg  uint32
	size uint32
	off  int64
}

// record is a decoded step record.
type record struct {
	step     Step
	prev     loc     // recStep
	epReward float64 // recSpool
	epStart  int64   // recSpool
}

// appendFrame appends a record with the given payload, written by fill
// into the buffer after the header, and returns the buffer.
func appendFrame(buf []byte, fill func([]byte) []byte) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, headerSize)...)
	buf = fill(buf)
	payload := buf[start+headerSize:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(payload, castagnoli))
	return buf
}

// appendStepBody appends the part of a step body common to both record
// types, type byte included.
func appendStepBody(b []byte, typ byte, s *Step) []byte {
	b = append(b, typ)
	b = binary.AppendUvarint(b, uint64(len(s.App)))
	b = append(b, s.App...)
	b = binary.AppendVarint(b, s.Episode)
	b = binary.AppendUvarint(b, uint64(s.T))
	b = binary.AppendVarint(b, s.Time.UnixNano())
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.Reward))
	var flags byte
	if s.Done {
		flags |= 1
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(s.Stage)))
	b = append(b, s.Stage...)
	for _, v := range [][]float64{s.State, s.Action} {
		b = binary.AppendUvarint(b, uint64(len(v)))
		for _, x := range v {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
	}
	return b
}

// appendStoredStep appends a recStep record for s whose episode's previous
// step is at prev.
func appendStoredStep(buf []byte, s *Step, prev loc) []byte {
	return appendFrame(buf, func(b []byte) []byte {
		b = appendStepBody(b, recStep, s)
		b = binary.AppendUvarint(b, uint64(prev.seg))
		b = binary.AppendUvarint(b, uint64(prev.off))
		return binary.AppendUvarint(b, uint64(prev.size))
	})
}

// appendSpooledStep appends a recSpool record.
func appendSpooledStep(buf []byte, s *spooled) []byte {
	return appendFrame(buf, func(b []byte) []byte {
		b = appendStepBody(b, recSpool, &s.Step)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.epReward))
		return binary.AppendVarint(b, s.epStart)
	})
}

// maxRecordSize bounds the encoded size of a stored step record.
func maxRecordSize(s *Step) int {
	return headerSize + 1 + 3*binary.MaxVarintLen64 + len(s.App) + 3*binary.MaxVarintLen64 + 8 + 1 +
		binary.MaxVarintLen64 + len(s.Stage) + 2*binary.MaxVarintLen64 + 8*(len(s.State)+len(s.Action)) +
		3*binary.MaxVarintLen64 + 8
}

// errShort is a payload that ends early.
var errShort = errors.New("payload ends early")

// decoder reads a payload.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.err = errShort
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) float() float64 {
	b := d.bytes(8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// floats decodes a vector into dst's storage.
func (d *decoder) floats(dst []float64) []float64 {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b))/8 {
		d.err = errShort
	}
	if d.err != nil {
		return dst[:0]
	}
	dst = dst[:0]
	for range n {
		dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(d.b)))
		d.b = d.b[8:]
	}
	return dst
}

// decodeRecord decodes a payload of the wanted type into r, reusing the
// storage of r.step's vectors.
func decodeRecord(payload []byte, want byte, r *record) error {
	if len(payload) == 0 {
		return fmt.Errorf("%w: empty payload", ErrCorrupt)
	}
	if payload[0] != want {
		return fmt.Errorf("%w: record type %d, want %d", ErrCorrupt, payload[0], want)
	}
	d := decoder{b: payload[1:]}
	s := &r.step
	s.App = string(d.bytes(d.uvarint()))
	s.Episode = d.varint()
	s.T = int(d.uvarint())
	s.Time = fromNanos(d.varint())
	s.Reward = d.float()
	flags := d.bytes(1)
	s.Done = len(flags) == 1 && flags[0]&1 != 0
	s.Stage = string(d.bytes(d.uvarint()))
	s.State = d.floats(s.State)
	if s.State == nil {
		s.State = []float64{}
	}
	s.Action = d.floats(s.Action)
	switch want {
	case recStep:
		r.prev = loc{seg: uint32(d.uvarint()), off: int64(d.uvarint()), size: uint32(d.uvarint())}
	case recSpool:
		r.epReward = d.float()
		r.epStart = d.varint()
	}
	if d.err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, d.err)
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the record", ErrCorrupt, len(d.b))
	}
	return nil
}

// checkFrame validates a record read at a known location: its header and
// checksum; it returns the payload.
func checkFrame(rec []byte) ([]byte, error) {
	if len(rec) < headerSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(rec))
	}
	n := binary.LittleEndian.Uint32(rec)
	if int(n) != len(rec)-headerSize {
		return nil, fmt.Errorf("%w: payload length %d, want %d", ErrCorrupt, n, len(rec)-headerSize)
	}
	payload := rec[headerSize:]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(rec[4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return payload, nil
}
