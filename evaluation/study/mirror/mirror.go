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
	"sort"
	"strings"
	"sync"
	"syscall"
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

// stamp is what a file looked like when it was last pushed or pulled (an
// atomic rewrite gives a new inode even within one timestamp tick).
type stamp struct {
	size  int64
	mod   time.Time
	inode uint64
}

func stampOf(info fs.FileInfo) stamp {
	st := stamp{size: info.Size(), mod: info.ModTime()}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.inode = sys.Ino
	}
	return st
}

// Mirror keeps the folder Dir in the store's folder URL.
type Mirror struct {
	store Store
	url   URL
	dir   string
	log   *slog.Logger

	mu     sync.Mutex // one push or pull at a time
	synced map[string]stamp

	stop chan struct{}
	done chan struct{}
}

// New returns a mirror of the local folder dir in the store's folder u;
// store is connected to u.Bucket. A dir that is a symbolic link is
// followed once, here.
func New(store Store, u URL, dir string) *Mirror {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
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
// were last pushed or pulled, oldest first, and returns how many it sent.
// It stops at the first file the store refuses: the store then holds every
// file as it was at some moment, so that a file naming another (a
// checkpoint's index) never arrives without it. (The periodic pushes of a
// started mirror also leave files changed after they began for the next
// one, since the run is still writing.) Names starting with a dot
// (an atomic write's temporary file) are not sent; a symbolic link or a
// name the store's folder cannot map back is reported, and nothing is
// deleted from the store.
func (m *Mirror) Push(ctx context.Context) (int, error) { return m.push(ctx, true) }

// push is Push; unless settled (the writers are done), files changed
// after it began wait for the next push.
func (m *Mirror) push(ctx context.Context, settled bool) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	began := time.Now()
	type pending struct {
		path, rel string
		st        stamp
	}
	var todo []pending
	var errs []error
	walk := filepath.WalkDir(m.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // not written yet, or removed since the walk listed it
			}
			return err
		}
		if p == m.dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(m.dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			errs = append(errs, fmt.Errorf("%s: a symbolic link: the mirror sends regular files and folders only", rel))
			return nil
		case d.IsDir() || !d.Type().IsRegular():
			return nil
		}
		if err := checkKey(rel); err != nil {
			errs = append(errs, fmt.Errorf("not sent: %w", err))
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if st := stampOf(info); m.synced[rel] != st && (settled || !info.ModTime().After(began)) {
			todo = append(todo, pending{p, rel, st})
		}
		return nil
	})
	if walk != nil {
		errs = append(errs, walk)
	}
	sort.SliceStable(todo, func(a, b int) bool { return todo[a].st.mod.Before(todo[b].st.mod) })
	n := 0
	for _, f := range todo {
		sent, err := m.pushFile(ctx, f.path, f.rel)
		if err != nil {
			errs = append(errs, err, fmt.Errorf("%d newer files wait for the next push", len(todo)-n-1))
			break
		}
		if sent {
			n++
		}
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
	st := stampOf(info)
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

// PushTimeout bounds each push of a started mirror.
const PushTimeout = 2 * time.Minute

// Start pulls the store folder into dir, then pushes dir at an interval
// until Stop, which pushes once more. A failed periodic push is logged and
// its files are tried again at the next one. When ctx ends (the process is
// told to stop) the mirror pushes at once, without waiting for the run to
// wind down, and then only at Stop; pushes run on a context of their own,
// bounded by PushTimeout.
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
	stop := make(chan struct{})
	m.stop, m.done = stop, make(chan struct{})
	go m.run(ctx, stop, o.every)
	return m, nil
}

func (m *Mirror) run(ctx context.Context, stop <-chan struct{}, every time.Duration) {
	defer close(m.done)
	t := time.NewTicker(every)
	defer t.Stop()
	done := ctx.Done()
	for {
		select {
		case <-stop:
			return
		case <-done:
			done = nil // once
			t.Stop()
			m.pushLogged(context.WithoutCancel(ctx), "the run is stopping")
		case <-t.C:
			m.pushLogged(context.WithoutCancel(ctx), "periodic")
		}
	}
}

func (m *Mirror) pushLogged(ctx context.Context, why string) {
	ctx, cancel := context.WithTimeout(ctx, PushTimeout)
	defer cancel()
	if n, err := m.push(ctx, false); err != nil {
		m.log.Warn("mirror: push failed; trying again at the next", "why", why, "url", m.url.String(), "sent", n, "err", err)
	}
}

// Stop ends the periodic pushes and pushes what is left with ctx (give it
// its own deadline: the run's context may be cancelled already).
func (m *Mirror) Stop(ctx context.Context) error {
	if m.stop != nil {
		close(m.stop)
		<-m.done
		m.stop = nil
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
		if rel == "" || strings.HasSuffix(rel, "/") {
			continue // a folder marker some tools create
		}
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
		got(rel, stampOf(info))
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
