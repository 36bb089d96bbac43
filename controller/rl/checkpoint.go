package rl

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Checkpoint file layout (all integers little endian):
//
//	magic    [8]byte  "AWRLCKPT"
//	version  uint32   CheckpointVersion
//	entries  uint32   number of entries
//	metaLen  uint32   length of the JSON metadata blob
//	meta     [metaLen]byte
//	entries× { nameLen uint16; name [nameLen]byte; n uint64; values [n]float64 }
//	crc      uint32   CRC-32C (Castagnoli) of every preceding byte
const (
	checkpointMagic = "AWRLCKPT"
	// CheckpointVersion is the format version written and accepted.
	CheckpointVersion = 1
	headerLen         = len(checkpointMagic) + 4 + 4 + 4
	maxMetaLen        = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checkpoint is an ordered set of named float64 vectors (network parameters,
// optimiser state, ...) plus an optional JSON metadata blob. Entry values are
// copied on Put and on Get-style loads, so a Checkpoint never aliases a
// network.
type Checkpoint struct {
	meta    []byte
	names   []string
	entries map[string][]float64
}

// NewCheckpoint returns an empty checkpoint.
func NewCheckpoint() *Checkpoint { return &Checkpoint{entries: map[string][]float64{}} }

// Put stores a copy of values under name, replacing an earlier entry of that
// name but keeping its position.
func (c *Checkpoint) Put(name string, values []float64) {
	if _, ok := c.entries[name]; !ok {
		c.names = append(c.names, name)
	}
	c.entries[name] = append(make([]float64, 0, len(values)), values...)
}

// PutParams stores a copy of p's values (not gradients) under name.
func (c *Checkpoint) PutParams(name string, p *Params) { c.Put(name, p.values) }

// PutAdam stores o's moment estimates and step count under name+"/m",
// name+"/v" and name+"/t". Hyperparameters are configuration and not stored.
func (c *Checkpoint) PutAdam(name string, o *Adam) {
	m, v := o.moments()
	c.Put(name+"/m", m)
	c.Put(name+"/v", v)
	c.Put(name+"/t", []float64{float64(o.t)})
}

// Names returns the entry names in insertion (file) order.
func (c *Checkpoint) Names() []string { return append([]string(nil), c.names...) }

// Get returns the values stored under name (a view; do not modify).
func (c *Checkpoint) Get(name string) ([]float64, bool) {
	v, ok := c.entries[name]
	return v, ok
}

// LoadParams copies the entry name into p's values. It fails when the entry
// is missing or its length differs from p.Len().
func (c *Checkpoint) LoadParams(name string, p *Params) error {
	v, err := c.lookup(name)
	if err != nil {
		return err
	}
	if len(v) != p.Len() {
		return fmt.Errorf("rl: checkpoint entry %q has %d values, Params has %d", name, len(v), p.Len())
	}
	copy(p.values, v)
	return nil
}

// LoadAdam restores the state written by PutAdam into o, checking that the
// moment vectors match p (the Params o optimises). State that was saved before
// the first Step is empty and leaves o fresh apart from the step count.
func (c *Checkpoint) LoadAdam(name string, o *Adam, p *Params) error {
	m, err := c.lookup(name + "/m")
	if err != nil {
		return err
	}
	v, err := c.lookup(name + "/v")
	if err != nil {
		return err
	}
	t, err := c.lookup(name + "/t")
	if err != nil {
		return err
	}
	if len(t) != 1 || t[0] < 0 || t[0] != math.Trunc(t[0]) {
		return fmt.Errorf("rl: checkpoint entry %q: want one non-negative integer step count, got %v", name+"/t", t)
	}
	if len(m) != len(v) {
		return fmt.Errorf("rl: checkpoint Adam state %q: first moment has %d values, second %d", name, len(m), len(v))
	}
	if len(m) != 0 && len(m) != p.Len() {
		return fmt.Errorf("rl: checkpoint Adam state %q has %d values, Params has %d", name, len(m), p.Len())
	}
	o.m32, o.v32 = nil, nil
	if len(m) == 0 {
		o.m, o.v = nil, nil
	} else {
		o.m = append(make([]float64, 0, len(m)), m...)
		o.v = append(make([]float64, 0, len(v)), v...)
	}
	o.t = int(t[0])
	return nil
}

// Restore is one entry of Checkpoint.Restore: the values of Params under
// Name and, when Adam is set, that optimiser's state under AdamName.
type Restore struct {
	Name     string
	Params   *Params
	AdamName string
	Adam     *Adam
}

// Restore loads every entry of rs all or none: each is loaded into a copy
// first (LoadParams, LoadAdam), and rs's Params and Adams are written only
// when every entry loaded, so that a bad checkpoint changes nothing.
func (c *Checkpoint) Restore(rs ...Restore) error {
	vals := make([]*Params, len(rs))
	opts := make([]Adam, len(rs))
	for i, r := range rs {
		vals[i] = NewParams(r.Params.Len())
		if err := c.LoadParams(r.Name, vals[i]); err != nil {
			return err
		}
		if r.Adam != nil {
			opts[i] = *r.Adam
			if err := c.LoadAdam(r.AdamName, &opts[i], vals[i]); err != nil {
				return err
			}
		}
	}
	for i, r := range rs {
		copy(r.Params.values, vals[i].values)
		if r.Adam != nil {
			*r.Adam = opts[i]
		}
	}
	return nil
}

func (c *Checkpoint) lookup(name string) ([]float64, error) {
	v, ok := c.entries[name]
	if !ok {
		return nil, fmt.Errorf("rl: checkpoint has no entry %q (has %v)", name, c.names)
	}
	return v, nil
}

// SetMeta stores v encoded as JSON as the metadata blob.
func (c *Checkpoint) SetMeta(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("rl: checkpoint metadata: %w", err)
	}
	if len(b) > maxMetaLen {
		return fmt.Errorf("rl: checkpoint metadata is %d bytes, limit %d", len(b), maxMetaLen)
	}
	c.meta = b
	return nil
}

// Meta decodes the metadata blob into v; it fails when there is none.
func (c *Checkpoint) Meta(v any) error {
	if len(c.meta) == 0 {
		return errors.New("rl: checkpoint has no metadata")
	}
	if err := json.Unmarshal(c.meta, v); err != nil {
		return fmt.Errorf("rl: checkpoint metadata: %w", err)
	}
	return nil
}

// MarshalBinary encodes the checkpoint in the versioned format.
func (c *Checkpoint) MarshalBinary() ([]byte, error) {
	n := headerLen + len(c.meta) + 4
	for _, name := range c.names {
		if name == "" || len(name) > math.MaxUint16 {
			return nil, fmt.Errorf("rl: checkpoint entry name %q: length must be 1..%d bytes", name, math.MaxUint16)
		}
		n += 2 + len(name) + 8 + 8*len(c.entries[name])
	}
	b := make([]byte, 0, n)
	b = append(b, checkpointMagic...)
	b = binary.LittleEndian.AppendUint32(b, CheckpointVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.names)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.meta)))
	b = append(b, c.meta...)
	for _, name := range c.names {
		v := c.entries[name]
		b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
		b = append(b, name...)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(v)))
		for _, x := range v {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// UnmarshalCheckpoint decodes data written by MarshalBinary, verifying the
// magic, the version and the checksum before anything else is parsed.
func UnmarshalCheckpoint(data []byte) (*Checkpoint, error) {
	if len(data) < len(checkpointMagic) || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return nil, fmt.Errorf("rl: not a checkpoint: bad magic (want %q)", checkpointMagic)
	}
	if len(data) < headerLen+4 {
		return nil, fmt.Errorf("rl: checkpoint truncated: %d bytes, header alone needs %d", len(data), headerLen+4)
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != CheckpointVersion {
		return nil, fmt.Errorf("rl: checkpoint version %d not supported (want %d)", v, CheckpointVersion)
	}
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[len(data)-4:]); got != want {
		return nil, fmt.Errorf("rl: checkpoint checksum mismatch (computed %08x, stored %08x): file corrupt or truncated", got, want)
	}
	r := reader{b: body, off: 12}
	count := r.u32()
	metaLen := r.u32()
	if r.err == nil && metaLen > maxMetaLen {
		return nil, fmt.Errorf("rl: checkpoint metadata length %d exceeds limit %d", metaLen, maxMetaLen)
	}
	c := NewCheckpoint()
	if meta := r.bytes(int(metaLen), "metadata"); len(meta) > 0 {
		c.meta = append([]byte(nil), meta...)
	}
	for i := 0; i < int(count) && r.err == nil; i++ {
		name := string(r.bytes(int(r.u16()), "entry name"))
		n := r.u64()
		if r.err != nil {
			break
		}
		if n > uint64(len(r.b)-r.off)/8 {
			return nil, fmt.Errorf("rl: checkpoint entry %q claims %d values but only %d bytes remain", name, n, len(r.b)-r.off)
		}
		if _, dup := c.entries[name]; dup {
			return nil, fmt.Errorf("rl: checkpoint entry %q appears twice", name)
		}
		v := make([]float64, n)
		for j := range v {
			v[j] = math.Float64frombits(r.u64())
		}
		c.names = append(c.names, name)
		c.entries[name] = v
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.off != len(r.b) {
		return nil, fmt.Errorf("rl: checkpoint has %d trailing bytes after %d entries", len(r.b)-r.off, count)
	}
	return c, nil
}

// reader decodes little-endian fields, remembering the first overrun.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = fmt.Errorf("rl: checkpoint truncated reading %s at byte %d", what, r.off)
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) bytes(n int, what string) []byte { return r.take(n, what) }

func (r *reader) u16() uint16 {
	if s := r.take(2, "length"); s != nil {
		return binary.LittleEndian.Uint16(s)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if s := r.take(4, "count"); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if s := r.take(8, "value"); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

// WriteCheckpoint writes c to path (mode 0600) atomically
// (internal/atomicfile): a failure at any point leaves an existing file at
// path unchanged.
func WriteCheckpoint(path string, c *Checkpoint) error {
	data, err := c.MarshalBinary()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("rl: checkpoint: %w", err)
	}
	return nil
}

// ReadCheckpoint reads and verifies the checkpoint at path.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rl: read checkpoint: %w", err)
	}
	c, err := UnmarshalCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
