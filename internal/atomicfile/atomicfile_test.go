package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	require.NoError(t, Write(path, []byte("one"), 0o600))
	require.NoError(t, Write(path, []byte("two"), 0o644))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "the last write's permissions, whatever the umask")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")
}

// A write that fails at any point leaves the old file as it was and no
// temporary file behind.
func TestWriteFailureKeepsTheOldFile(t *testing.T) {
	boom := errors.New("disk full")
	for _, tc := range []struct {
		name  string
		fill  func(io.Writer) error
		sync  func(*os.File) error
		inDir string
	}{
		{name: "fill fails", fill: func(w io.Writer) error { _, _ = w.Write([]byte("half")); return boom }},
		{name: "sync fails", fill: func(w io.Writer) error { _, err := w.Write([]byte("new")); return err }, sync: func(*os.File) error { return boom }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "agent.ckpt")
			require.NoError(t, Write(path, []byte("old"), 0o644))
			if tc.sync != nil {
				syncFile = tc.sync
				t.Cleanup(func() { syncFile = (*os.File).Sync })
			}
			err := WriteWith(path, 0o644, tc.fill)
			require.ErrorIs(t, err, boom)
			assert.Contains(t, err.Error(), path, "the error names the file")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, "old", string(b))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "temporary file removed")
		})
	}
}

func TestWriteIntoMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	err := Write(filepath.Join(dir, "no", "such", "x"), []byte("x"), 0o644)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "no", "such", "x"))
	entries, rerr := os.ReadDir(dir)
	require.NoError(t, rerr)
	assert.Empty(t, entries)
}
