package agents

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Objects is the part of an S3-compatible bucket the runner copies its
// checkpoints to (objstore.Client is one), so that an agent runner whose
// disk is gone (a rescheduled pod) resumes from the bucket.
type Objects interface {
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get returns a reader of the whole object; a missing key gives an
	// error matching fs.ErrNotExist.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
}

// remote is where and how often checkpoints are copied to a bucket.
type remote struct {
	objs   Objects
	prefix string
	// every bounds how often an OFFLINE agent's checkpoint (written after
	// every step that brought records) is copied; a stage change and the
	// end of an acting episode are always copied.
	every time.Duration
}

// maxCheckpoint bounds the object read back: an agent checkpoint is a few
// MiB.
const maxCheckpoint = 512 << 20

// key is the object of the checkpoint folder dir (relative to the runner's
// checkpoint directory, "namespace/name-uid"): one tar archive of the
// folder's agentFile and stateFile, so that a reader sees both files of one
// save or both of the one before (a PUT replaces an object at once).
func (r *remote) key(rel string) string {
	return path.Join(r.prefix, filepath.ToSlash(rel)+".tar")
}

// pack archives dir's checkpoint files.
func pack(dir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range []string{agentFile, stateFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: time.Now().UTC()}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unpack reads an archive written by pack: its files and their State.
func unpack(b []byte) (map[string][]byte, State, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, State{}, fmt.Errorf("not a checkpoint archive: %w", err)
		}
		if h.Name != agentFile && h.Name != stateFile {
			return nil, State{}, fmt.Errorf("unexpected file %q in the checkpoint archive", h.Name)
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxCheckpoint))
		if err != nil {
			return nil, State{}, fmt.Errorf("checkpoint archive, %s: %w", h.Name, err)
		}
		files[h.Name] = data
	}
	var st State
	for _, name := range []string{agentFile, stateFile} {
		if _, ok := files[name]; !ok {
			return nil, State{}, fmt.Errorf("the checkpoint archive has no %s", name)
		}
	}
	if err := json.Unmarshal(files[stateFile], &st); err != nil {
		return nil, State{}, fmt.Errorf("checkpoint archive, %s: %w", stateFile, err)
	}
	return files, st, nil
}

// upload copies the checkpoint folder dir to the bucket.
func (r *remote) upload(ctx context.Context, rel, dir string) error {
	b, err := pack(dir)
	if err != nil {
		return fmt.Errorf("packing the checkpoint %s: %w", dir, err)
	}
	if err := r.objs.Put(ctx, r.key(rel), bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("copying the checkpoint %s to the object store: %w", dir, err)
	}
	return nil
}

// restore brings the bucket's copy of a checkpoint to dir when the bucket's
// is newer than dir's (or dir has none), and reports whether it did. A
// missing object is not an error. An object that is not a checkpoint
// archive is copied aside in the bucket (key.unreadable-<ns>, nothing is
// lost) and reported as an error wrapping errUnreadableRemote; any other
// error (the store unreachable) leaves everything as it was: the caller
// retries rather than starting a fresh agent that would overwrite the copy.
func (r *remote) restore(ctx context.Context, rel, dir string, now time.Time) (bool, error) {
	key := r.key(rel)
	rc, err := r.objs.Get(ctx, key)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the checkpoint %s from the object store: %w", key, err)
	}
	b, err := io.ReadAll(io.LimitReader(rc, maxCheckpoint+1))
	_ = rc.Close()
	if err != nil {
		return false, fmt.Errorf("reading the checkpoint %s from the object store: %w", key, err)
	}
	files, st, uerr := unpack(b)
	if uerr == nil && len(b) > maxCheckpoint {
		uerr = fmt.Errorf("larger than %d MiB", maxCheckpoint>>20)
	}
	if uerr != nil {
		aside := fmt.Sprintf("%s.unreadable-%d", key, now.UnixNano())
		if err := r.objs.Put(ctx, aside, bytes.NewReader(b), int64(len(b))); err != nil {
			return false, fmt.Errorf("the checkpoint %s in the object store is unreadable (%v) and could not be copied aside: %w", key, uerr, err)
		}
		return false, fmt.Errorf("%w: %s (%v); copied to %s", errUnreadableRemote, key, uerr, aside)
	}
	if local, err := ReadState(dir); err == nil && !local.Saved.Before(st.Saved) {
		return false, nil // the local copy is as new: it was saved here
	}
	// Write beside, then swap the folder in, keeping what was there.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return false, fmt.Errorf("restoring the checkpoint %s: %w", key, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".restore-*")
	if err != nil {
		return false, fmt.Errorf("restoring the checkpoint %s: %w", key, err)
	}
	for name, data := range files {
		// Each file on disk before the folder is swapped in: a crash leaves
		// the old folder or a whole new one.
		if err := atomicfile.Write(filepath.Join(tmp, name), data, 0o644); err != nil {
			_ = os.RemoveAll(tmp)
			return false, fmt.Errorf("restoring the checkpoint %s: %w", key, err)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		if _, err := quarantineAs(dir, fmt.Sprintf("%s.replaced-%d", dir, now.UnixNano())); err != nil {
			_ = os.RemoveAll(tmp)
			return false, err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return false, fmt.Errorf("restoring the checkpoint %s: %w", key, err)
	}
	return true, nil
}

// errUnreadableRemote marks a bucket copy that is not a checkpoint.
var errUnreadableRemote = errors.New("the checkpoint in the object store is unreadable")
