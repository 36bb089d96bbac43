package segments

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Spec describes one segment in an application chain.
type Spec struct {
	// Name is one of the segment names (see Names).
	Name string `json:"name"`
	// Size is the payload size in the segment's own unit (see Info.Unit).
	Size int `json:"size"`
}

// FormatChain writes a chain as name:size steps joined by arrows, as in
// tables: "compress:131072→matMul:100".
func FormatChain(chain []Spec) string {
	var b strings.Builder
	for i, s := range chain {
		if i > 0 {
			b.WriteString("→")
		}
		fmt.Fprintf(&b, "%s:%d", s.Name, s.Size)
	}
	return b.String()
}

// Result reports the work one invocation did.
type Result struct {
	// BytesIn is the number of payload bytes read or consumed.
	BytesIn int64 `json:"bytesIn"`
	// BytesOut is the number of payload bytes produced or written.
	BytesOut int64 `json:"bytesOut"`
	// Items counts the segment's natural items: rows, pixels, matrix cells.
	Items int64 `json:"items"`
	// Ops counts arithmetic operations where that is meaningful.
	Ops int64 `json:"ops"`
	// Checksum is a digest of the output so that tests can check the work.
	Checksum uint64 `json:"checksum"`
}

// Add accumulates r into the receiver (checksums are combined by xor-rotate).
func (r *Result) Add(o Result) {
	r.BytesIn += o.BytesIn
	r.BytesOut += o.BytesOut
	r.Items += o.Items
	r.Ops += o.Ops
	r.Checksum = (r.Checksum<<7 | r.Checksum>>57) ^ o.Checksum
}

// Env holds what segments need from their surroundings.
type Env struct {
	// Dir is a scratch directory for file segments; it must exist.
	Dir string
	// Objects is the object store for object* segments (nil if unused).
	Objects ObjectStore
	// DB is the database for db* segments (nil if unused).
	DB Database
	// Seed makes generated inputs deterministic.
	Seed int64
	// Instance distinguishes several instances of the same segment in one
	// application (their files, objects and tables must not collide).
	Instance int
}

// Instance is a segment prepared with its inputs; Run executes it once.
// Run must be safe for concurrent use.
type Instance interface {
	Run(ctx context.Context) (Result, error)
	// Close releases what New set up (files, objects, tables).
	Close(ctx context.Context) error
}

// Info describes a segment kind.
type Info struct {
	Name string
	// Unit names what Spec.Size counts.
	Unit string
	// Sizes are the payload sizes used by calibration and the generator,
	// smallest first.
	Sizes []int
	// Needs lists external services: "objects", "db", "dir".
	Needs []string
	// New prepares an instance (generates inputs, uploads objects, creates tables).
	New func(ctx context.Context, size int, env Env) (Instance, error)
}

var registry = map[string]Info{}

// Register adds a segment kind, from an init function (this package's
// segments, or another package's: docs/extending.md). It panics on a name
// registered before, an empty name or unit, no sizes or sizes not
// positive and ascending, or no New: programming errors, as with
// database/sql.Register. A registered segment runs in the workload server
// (app.Prepare) and, once the calibration profile has entries for it,
// appears in generated pools and in the simulator.
func Register(i Info) {
	switch {
	case i.Name == "" || i.Unit == "" || i.New == nil:
		panic(fmt.Sprintf("segments: Register %q: name, unit and New are required", i.Name))
	case len(i.Sizes) == 0 || i.Sizes[0] <= 0 || !sort.IntsAreSorted(i.Sizes):
		panic(fmt.Sprintf("segments: Register %q: sizes %v must be positive and ascending", i.Name, i.Sizes))
	}
	if _, dup := registry[i.Name]; dup {
		panic("segments: duplicate " + i.Name)
	}
	registry[i.Name] = i
}

// Names returns all segment names in sorted order.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the description of a segment kind.
func Lookup(name string) (Info, bool) {
	i, ok := registry[name]
	return i, ok
}

// New validates spec and prepares an instance.
func New(ctx context.Context, spec Spec, env Env) (Instance, error) {
	info, ok := registry[spec.Name]
	if !ok {
		return nil, fmt.Errorf("segment %q: unknown (known: %v)", spec.Name, Names())
	}
	if spec.Size <= 0 {
		return nil, fmt.Errorf("segment %q: size %d must be positive (%s)", spec.Name, spec.Size, info.Unit)
	}
	for _, n := range info.Needs {
		switch {
		case n == "objects" && env.Objects == nil:
			return nil, fmt.Errorf("segment %q: needs an object store, none configured", spec.Name)
		case n == "db" && env.DB == nil:
			return nil, fmt.Errorf("segment %q: needs a database, none configured", spec.Name)
		case n == "dir" && env.Dir == "":
			return nil, fmt.Errorf("segment %q: needs a scratch directory, none configured", spec.Name)
		}
	}
	inst, err := info.New(ctx, spec.Size, env)
	if err != nil {
		return nil, fmt.Errorf("segment %q size %d: %w", spec.Name, spec.Size, err)
	}
	return inst, nil
}
