package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// csvFile reads a CSV trace record by record with messages that name the
// file, line and column.
type csvFile struct {
	name string
	r    *csv.Reader
	// header holds the column names of the first record.
	header []string
	// line is the line of the last record read.
	line int
}

// newCSV decompresses r if needed, reads the header and checks it with
// check, which returns a description of what is wrong (or "").
func newCSV(r io.Reader, name string, check func(header []string) string) (*csvFile, error) {
	br, err := plain(r, name)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1 // checked by the callers, with better messages
	cr.ReuseRecord = true
	f := &csvFile{name: name, r: cr}
	rec, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file: want a CSV header", name)
	}
	if err != nil {
		return nil, f.wrap(err)
	}
	f.header = append([]string(nil), rec...)
	if len(f.header) > 0 {
		f.header[0] = strings.TrimPrefix(f.header[0], "\ufeff")
	}
	if msg := check(f.header); msg != "" {
		return nil, fmt.Errorf("%s:1: header: %s", name, msg)
	}
	return f, nil
}

// next returns the next record, io.EOF at the end, or a located error when
// the record's field count differs from the header's.
func (f *csvFile) next() ([]string, error) {
	rec, err := f.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, f.wrap(err)
	}
	f.line, _ = f.r.FieldPos(0)
	if len(rec) != len(f.header) {
		return nil, fmt.Errorf("%s:%d: %d fields, want %d as in the header", f.name, f.line, len(rec), len(f.header))
	}
	return rec, nil
}

// fieldErr locates a problem with field i of the last record.
func (f *csvFile) fieldErr(i int, format string, args ...any) error {
	line, col := f.r.FieldPos(i)
	return fmt.Errorf("%s:%d:%d: column %q: %s", f.name, line, col, f.header[i], fmt.Sprintf(format, args...))
}

func (f *csvFile) wrap(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %w", f.name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s:%d: read: %w", f.name, f.line+1, err)
}

// headerIs describes how header differs from want ("" when equal).
func headerIs(header []string, want ...string) string {
	if len(header) != len(want) {
		return fmt.Sprintf("%d columns %q, want %d columns %q", len(header), header, len(want), want)
	}
	for i := range want {
		if header[i] != want[i] {
			return fmt.Sprintf("column %d is %q, want %q", i+1, header[i], want[i])
		}
	}
	return ""
}
