package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Format is a trace file format.
type Format int

const (
	// FormatUnknown means the content matched no format.
	FormatUnknown Format = iota
	// FormatCounts is white-space separated per-second counts (ReadCounts).
	FormatCounts
	// FormatAzureFunctions2019 is the per-minute invocation count CSV
	// (ScanAzureFunctions2019).
	FormatAzureFunctions2019
	// FormatAzureFunctions2021 is the invocation CSV with end timestamps and
	// durations (ScanAzureFunctions2021).
	FormatAzureFunctions2021
	// FormatAzureLLM is the LLM inference request CSV (ReadAzureLLM).
	FormatAzureLLM
)

var (
	formatMu    sync.RWMutex
	formatNames = map[Format]string{
		FormatUnknown:            "unknown",
		FormatCounts:             "counts",
		FormatAzureFunctions2019: "azure-functions-2019",
		FormatAzureFunctions2021: "azure-functions-2021",
		FormatAzureLLM:           "azure-llm",
	}
	// registered are the formats of RegisterFormat, in order.
	registered []FormatSpec
)

// FormatSpec is a trace format registered from outside this package
// (docs/extending.md).
type FormatSpec struct {
	// Name is the format's (ParseFormat, --format).
	Name string
	// Detect reports whether a file whose first line is first (without a
	// byte-order mark or carriage return) is in this format: a CSV header,
	// a magic word. It is asked after the built-in headers and before the
	// built-in counts.
	Detect func(first string) bool
	// Read reads the (decompressed) content of the file called name into
	// its load series; step is the bin length of WithBinStep, for formats
	// that list individual requests. Errors name the file and line.
	Read func(r io.Reader, name string, step time.Duration) (Series, error)
}

// RegisterFormat adds a trace format and returns its value: Load detects
// and reads it, ParseFormat knows its name. It panics on a name that is
// empty or taken, or no Detect or Read: programming errors, as with
// database/sql.Register.
func RegisterFormat(spec FormatSpec) Format {
	formatMu.Lock()
	defer formatMu.Unlock()
	if spec.Name == "" || spec.Detect == nil || spec.Read == nil {
		panic(fmt.Sprintf("trace: RegisterFormat %q: name, Detect and Read are required", spec.Name))
	}
	for _, n := range formatNames {
		if n == spec.Name {
			panic("trace: format " + spec.Name + " registered twice")
		}
	}
	f := FormatAzureLLM + 1 + Format(len(registered))
	formatNames[f] = spec.Name
	registered = append(registered, spec)
	return f
}

// registeredSpec is the spec of a registered format.
func registeredSpec(f Format) (FormatSpec, bool) {
	formatMu.RLock()
	defer formatMu.RUnlock()
	i := int(f - FormatAzureLLM - 1)
	if i < 0 || i >= len(registered) {
		return FormatSpec{}, false
	}
	return registered[i], true
}

// String returns the format's name as accepted by ParseFormat.
func (f Format) String() string {
	formatMu.RLock()
	defer formatMu.RUnlock()
	if n, ok := formatNames[f]; ok {
		return n
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat returns the format named s (see Format.String).
func ParseFormat(s string) (Format, error) {
	formatMu.RLock()
	defer formatMu.RUnlock()
	var known []string
	for f := FormatCounts; ; f++ {
		n, ok := formatNames[f]
		if !ok {
			break
		}
		if n == s {
			return f, nil
		}
		known = append(known, n)
	}
	return FormatUnknown, fmt.Errorf("unknown trace format %q (known: %s)", s, strings.Join(known, ", "))
}

// detect recognises the format from the start of the (decompressed) content
// without consuming it: a known CSV header, or a first token that is a
// count.
func detect(br *bufio.Reader, name string) (Format, error) {
	head, err := br.Peek(readBufferSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return FormatUnknown, fmt.Errorf("%s: %w", name, err)
	}
	whole := err != nil && errors.Is(err, io.EOF)
	if whole && len(bytes.TrimSpace(head)) == 0 {
		if len(head) == 0 {
			return FormatUnknown, fmt.Errorf("%s: the file is empty", name)
		}
		return FormatUnknown, fmt.Errorf("%s: the file holds only white space", name)
	}
	if at := binaryAt(head, !whole); at >= 0 {
		return FormatUnknown, fmt.Errorf("%s: not a text trace or a gzip'd one: binary content at byte %d", name, at+1)
	}
	first := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		first = head[:i]
	}
	line := strings.TrimPrefix(strings.TrimRight(string(first), "\r"), "\ufeff")
	switch {
	case strings.HasPrefix(line, strings.Join(azure2019Keys, ",")+","):
		return FormatAzureFunctions2019, nil
	case line == "app,func,end_timestamp,duration":
		return FormatAzureFunctions2021, nil
	case line == "TIMESTAMP,ContextTokens,GeneratedTokens":
		return FormatAzureLLM, nil
	}
	formatMu.RLock()
	for i, spec := range registered {
		if spec.Detect(line) {
			formatMu.RUnlock()
			return FormatAzureLLM + 1 + Format(i), nil
		}
	}
	formatMu.RUnlock()
	if looksLikeCounts(head, first) {
		return FormatCounts, nil
	}
	if len(line) > 80 {
		line = line[:80] + "..."
	}
	return FormatUnknown, fmt.Errorf("%s:1: unknown trace format: first line %q is no known CSV header and the file is not white-space separated counts", name, line)
}

// looksLikeCounts reports whether the content starts with a whole number
// token and its first line has no comma: the reader then reports any later
// bad value precisely.
func looksLikeCounts(head, first []byte) bool {
	if bytes.IndexByte(first, ',') >= 0 {
		return false
	}
	tok := bytes.TrimLeft(head, " \t\r\n\v\f")
	if i := bytes.IndexAny(tok, " \t\r\n\v\f"); i >= 0 {
		tok = tok[:i]
	}
	_, ok := parseCount(tok)
	return ok
}

type loadOptions struct {
	format Format
	step   time.Duration
}

// LoadOption configures Load.
type LoadOption func(*loadOptions)

// WithFormat skips detection and reads the file as format f.
func WithFormat(f Format) LoadOption { return func(o *loadOptions) { o.format = f } }

// WithBinStep sets the bin length for formats that list individual requests
// (Azure Functions 2021, Azure LLM); the default is one second. Count formats
// keep their own step (one second, one minute); resample them with Resample.
func WithBinStep(d time.Duration) LoadOption { return func(o *loadOptions) { o.step = d } }

// Load reads the trace file at path, gzip-compressed or not, detecting its
// format from the content (see Format), and returns its load series: counts
// as they are, Azure Functions 2019 summed over all functions, request
// traces binned. The series is named after the file's base name.
func Load(path string, opts ...LoadOption) (Series, error) {
	o := loadOptions{step: time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	br, closer, name, err := openFile(path)
	if err != nil {
		return Series{}, err
	}
	defer closer.Close()
	format := o.format
	if format == FormatUnknown {
		if format, err = detect(br, name); err != nil {
			return Series{}, err
		}
	}
	switch format {
	case FormatCounts:
		return ReadCounts(br, name)
	case FormatAzureFunctions2019:
		sums, err := AggregateAzureFunctions2019(br, name, ByAll)
		if err != nil {
			return Series{}, err
		}
		return sums[""], nil
	case FormatAzureFunctions2021:
		return BinAzureFunctions2021(br, name, o.step)
	case FormatAzureLLM:
		tr, err := ReadAzureLLM(br, name)
		if err != nil {
			return Series{}, err
		}
		return tr.Series(o.step)
	default:
		spec, ok := registeredSpec(format)
		if !ok {
			return Series{}, fmt.Errorf("%s: %v: no loader for this format", name, format)
		}
		return spec.Read(br, name, o.step)
	}
}

// LoadAzureLLM reads an Azure LLM inference trace file (gzip-compressed or
// not) with its request sizes.
func LoadAzureLLM(path string) (LLMTrace, error) {
	br, closer, name, err := openFile(path)
	if err != nil {
		return LLMTrace{}, err
	}
	defer closer.Close()
	return ReadAzureLLM(br, name)
}
