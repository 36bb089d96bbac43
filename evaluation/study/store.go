package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Store keeps a study's finished cells, one JSON file per cell in
// Dir/cells, written atomically as each cell finishes: what is in the
// store is done, whatever interrupted the study.
type Store struct{ Dir string }

// record is a cell's file.
type record struct {
	Cell   Cell            `json:"cell"`
	Result json.RawMessage `json:"result"`
}

// OpenStore opens (creating) the store in dir.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, "cells"), 0o755); err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	return &Store{Dir: dir}, nil
}

func (s *Store) path(c Cell) string { return filepath.Join(s.Dir, "cells", c.Key()+".json") }

// Has reports whether c is done.
func (s *Store) Has(c Cell) bool {
	_, err := os.Stat(s.path(c))
	return err == nil
}

// Put saves c's result.
func (s *Store) Put(c Cell, result any) error {
	r, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("study: cell %s: %w", c.Key(), err)
	}
	b, err := json.MarshalIndent(record{Cell: c, Result: r}, "", " ")
	if err != nil {
		return fmt.Errorf("study: cell %s: %w", c.Key(), err)
	}
	return writeAtomic(s.path(c), append(b, '\n'))
}

// Get reads c's result into result.
func (s *Store) Get(c Cell, result any) error {
	rec, err := readRecord(s.path(c))
	if err != nil {
		return err
	}
	if rec.Cell != c {
		return fmt.Errorf("study: %s holds cell %+v, not %+v", s.path(c), rec.Cell, c)
	}
	if err := json.Unmarshal(rec.Result, result); err != nil {
		return fmt.Errorf("study: %s: %w", s.path(c), err)
	}
	return nil
}

// Missing are the plan's cells not done yet, in plan order.
func (s *Store) Missing(p Plan) Plan {
	var out Plan
	for _, c := range p {
		if !s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

func readRecord(path string) (record, error) {
	var rec record
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, fmt.Errorf("study: %w", err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("study: %s is not a cell's result: %w", path, err)
	}
	return rec, nil
}

// writeAtomic writes a study file so that a crash leaves the old one or
// the whole new one, never an empty one under the cell's name.
func writeAtomic(path string, b []byte) error {
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return fmt.Errorf("study: %w", err)
	}
	return nil
}

// Merge copies the cells of the stores in srcs (shards' outputs) into
// dst. A cell found twice must have the same result (shards of one plan
// never share a cell; a rerun of a cell with the same seed gives the same
// result), else Merge stops and names it.
func Merge(dst *Store, srcs ...string) (int, error) {
	n := 0
	for _, src := range srcs {
		files, err := filepath.Glob(filepath.Join(src, "cells", "*.json"))
		if err != nil {
			return n, fmt.Errorf("study: %w", err)
		}
		if len(files) == 0 {
			if _, err := os.Stat(filepath.Join(src, "cells")); errors.Is(err, fs.ErrNotExist) {
				return n, fmt.Errorf("study: %s holds no study output (no cells/ folder)", src)
			}
		}
		sort.Strings(files)
		for _, f := range files {
			rec, err := readRecord(f)
			if err != nil {
				return n, err
			}
			if rec.Cell.Key()+".json" != filepath.Base(f) {
				return n, fmt.Errorf("study: %s holds cell %s", f, rec.Cell.Key())
			}
			if dst.Has(rec.Cell) {
				have, err := readRecord(dst.path(rec.Cell))
				if err != nil {
					return n, err
				}
				if !bytes.Equal(compact(have.Result), compact(rec.Result)) {
					return n, fmt.Errorf("study: cell %s differs between %s and an earlier source", rec.Cell.Key(), strings.TrimSuffix(src, "/"))
				}
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return n, fmt.Errorf("study: %w", err)
			}
			if err := writeAtomic(dst.path(rec.Cell), b); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}
