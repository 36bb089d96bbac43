package mirror

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
)

// MemStore is an in-memory Store for tests. FailPut, when set, is asked
// before each Put and its error returned instead.
type MemStore struct {
	mu      sync.Mutex
	objects map[string][]byte
	puts    int
	FailPut func(key string) error
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{objects: map[string][]byte{}} }

// Put stores exactly size bytes of r.
func (s *MemStore) Put(_ context.Context, key string, r io.Reader, size int64) error {
	if s.FailPut != nil {
		if err := s.FailPut(key); err != nil {
			return err
		}
	}
	b, err := io.ReadAll(io.LimitReader(r, size))
	if err != nil {
		return err
	}
	if int64(len(b)) != size {
		return fmt.Errorf("put %q: %d of %d bytes", key, len(b), size)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[key] = b
	s.puts++
	return nil
}

// Get reads key; a missing key's error matches fs.ErrNotExist.
func (s *MemStore) Get(_ context.Context, key string) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objects[key]
	if !ok {
		return nil, fmt.Errorf("get %q: %w", key, fs.ErrNotExist)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// List returns the keys below prefix, sorted.
func (s *MemStore) List(_ context.Context, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// Object returns key's content and whether it is there.
func (s *MemStore) Object(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.objects[key]
	return b, ok
}

// Puts is how many Puts succeeded.
func (s *MemStore) Puts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts
}
