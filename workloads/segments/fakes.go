package segments

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
)

// MemObjects is a fake ObjectStore for unit tests: objects live in memory.
// It behaves like S3 where the segments can tell (Put replaces, Delete of a
// missing key succeeds, Get of a missing key fails) and is safe for
// concurrent use. The zero value is an empty store.
type MemObjects struct {
	// Fail, if set before use, is called before every operation ("put",
	// "get" or "delete"); a non-nil result fails that operation.
	Fail func(op, key string) error

	mu   sync.Mutex
	objs map[string][]byte
}

var _ ObjectStore = (*MemObjects)(nil)

func (m *MemObjects) check(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memobjects: %s %q: %w", op, key, err)
	}
	if m.Fail != nil {
		if err := m.Fail(op, key); err != nil {
			return fmt.Errorf("memobjects: %s %q: %w", op, key, err)
		}
	}
	return nil
}

// Put reads r to the end and stores it under key. A size other than -1
// (unknown) must equal the number of bytes read.
func (m *MemObjects) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := m.check(ctx, "put", key); err != nil {
		return err
	}
	if size < -1 {
		return fmt.Errorf("memobjects: put %q: size %d: want -1 (unknown) or a length", key, size)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("memobjects: put %q: read content: %w", key, err)
	}
	if size >= 0 && int64(len(data)) != size {
		return fmt.Errorf("memobjects: put %q: read %d bytes, size says %d", key, len(data), size)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memobjects: put %q: %w", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objs == nil {
		m.objs = map[string][]byte{}
	}
	m.objs[key] = data // never modified afterwards, so readers can share it
	return nil
}

// Get returns a reader of the object; a missing key gives an error matching
// fs.ErrNotExist.
func (m *MemObjects) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := m.check(ctx, "get", key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	data, ok := m.objs[key]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("memobjects: get %q: %w", key, fs.ErrNotExist)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// Delete removes key; a missing key is not an error.
func (m *MemObjects) Delete(ctx context.Context, key string) error {
	if err := m.check(ctx, "delete", key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, key)
	return nil
}

// Keys returns the stored keys in sorted order.
func (m *MemObjects) Keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.objs))
	for k := range m.objs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Object returns a copy of the object stored under key.
func (m *MemObjects) Object(key string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.objs[key]
	return bytes.Clone(data), ok
}
