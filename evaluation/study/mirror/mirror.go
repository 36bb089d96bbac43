package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Store is what a mirror needs of an object store connected to one bucket;
// objstore.Client has it, MemStore is the fake.
type Store interface {
	// Put stores key with size bytes of r.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get reads key.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// List returns the keys below prefix, at every level, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

// DefaultEvery is how often a started mirror pushes: a pod evicted between
// two pushes loses at most this much of its work (a study's cells take
// minutes each at the paper's scale).
const DefaultEvery = 30 * time.Second

// stamp is what a file looked like when it was last pushed or pulled.
type stamp struct {
	size int64
	mod  time.Time
}

// Mirror keeps the folder Dir in the store's folder URL.
type Mirror struct {
	store Store
	url   URL
	dir   string
	log   *slog.Logger

	mu     sync.Mutex // one push or pull at a time
	synced map[string]stamp

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a mirror of the local folder dir in the store's folder u;
// store is connected to u.Bucket.
func New(store Store, u URL, dir string) *Mirror {
	return &Mirror{store: store, url: u, dir: dir, log: slog.Default(), synced: map[string]stamp{}}
}

// URL is the store's folder.
func (m *Mirror) URL() URL { return m.url }

// keyPrefix is the prefix of the folder's keys ("" or ending in "/").
func (m *Mirror) keyPrefix() string {
	if m.url.Prefix == "" {
		return ""
	}
	return m.url.Prefix + "/"
}

// Pull copies the store folder's files that the local folder lacks into it
// and returns how many it copied. A local file is kept as it is, even if
// the store's differs: it is the newer (a run resumed on the same
// machine), and the next Push sends it.
func (m *Mirror) Pull(ctx context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := download(ctx, m.store, m.url, m.dir, func(rel string, st stamp) { m.synced[rel] = st })
	if err != nil {
		return n, fmt.Errorf("mirror: pull %s into %s: %w", m.url, m.dir, err)
	}
	return n, nil
}

// Push sends the local folder's files that are new or changed since they
// were last pushed or pulled, and returns how many it sent. A file that
// fails is tried again at the next Push; the others are still sent. Files
// whose names start with a dot (an atomic write's temporary file) are
// not sent; nothing is deleted from the store.
func (m *Mirror) Push(ctx context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	var errs []error
	walk := filepath.WalkDir(m.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == m.dir && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir // nothing written yet
			}
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != m.dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(m.dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		sent, err := m.pushFile(ctx, p, rel)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		if sent {
			n++
		}
		return nil
	})
	if walk != nil {
		errs = append(errs, walk)
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("mirror: push %s to %s: %w", m.dir, m.url, err)
	}
	return n, nil
}

// pushFile sends one file unless it is as it was last synced.
func (m *Mirror) pushFile(ctx context.Context, p, rel string) (bool, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // replaced or removed since the walk saw it
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return false, err
	}
	st := stamp{size: info.Size(), mod: info.ModTime()}
	if m.synced[rel] == st {
		return false, nil
	}
	if err := m.store.Put(ctx, m.keyPrefix()+rel, f, st.size); err != nil {
		return false, fmt.Errorf("%s: %w", rel, err)
	}
	m.synced[rel] = st
	return true, nil
}

// Option configures Start.
type Option func(*options)

type options struct {
	every time.Duration
	log   *slog.Logger
}

// WithEvery sets how often the started mirror pushes (DefaultEvery).
func WithEvery(d time.Duration) Option { return func(o *options) { o.every = d } }

// WithLogger sets where a failed periodic push is logged (slog.Default).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Start pulls the store folder into dir, then pushes dir at an interval
// until Stop, which pushes once more. A failed periodic push is logged and
// its files are tried again at the next one.
func Start(ctx context.Context, store Store, u URL, dir string, opts ...Option) (*Mirror, error) {
	o := options{every: DefaultEvery, log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.every <= 0 {
		return nil, fmt.Errorf("mirror: push interval %s: must be positive", o.every)
	}
	m := New(store, u, dir)
	m.log = o.log
	if _, err := m.Pull(ctx); err != nil {
		return nil, err
	}
	loop, cancel := context.WithCancel(ctx)
	m.cancel, m.done = cancel, make(chan struct{})
	go m.run(loop, o.every)
	return m, nil
}

func (m *Mirror) run(ctx context.Context, every time.Duration) {
	defer close(m.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := m.Push(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("mirror: periodic push failed; trying again at the next", "url", m.url.String(), "sent", n, "err", err)
			}
		}
	}
}

// Stop ends the periodic pushes and pushes what is left with ctx (give it
// its own deadline: the run's context may be cancelled already).
func (m *Mirror) Stop(ctx context.Context) error {
	if m.cancel != nil {
		m.cancel()
		<-m.done
		m.cancel = nil
	}
	_, err := m.Push(ctx)
	return err
}

// download copies the files under the store folder u that dir lacks into
// dir, calling got with each one's path (slash-separated, relative to dir)
// and stamp.
func download(ctx context.Context, store Store, u URL, dir string, got func(rel string, st stamp)) (int, error) {
	prefix := ""
	if u.Prefix != "" {
		prefix = u.Prefix + "/"
	}
	keys, err := store.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, key := range keys {
		rel := strings.TrimPrefix(key, prefix)
		if err := checkKey(rel); err != nil {
			return n, fmt.Errorf("key %q: %w", key, err)
		}
		if strings.HasPrefix(path.Base(rel), ".") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if err := getFile(ctx, store, key, p); err != nil {
			return n, err
		}
		info, err := os.Stat(p)
		if err != nil {
			return n, err
		}
		got(rel, stamp{size: info.Size(), mod: info.ModTime()})
		n++
	}
	return n, nil
}

// getFile writes the object key to p atomically.
func getFile(ctx context.Context, store Store, key, p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	r, err := store.Get(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	return atomicfile.WriteWith(p, 0o644, func(w io.Writer) error {
		_, err := io.Copy(w, r)
		return err
	})
}
