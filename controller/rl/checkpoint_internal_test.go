package rl

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A write that fails after the temporary file was created leaves the old
// checkpoint intact and removes the temporary file.
func TestWriteCheckpointAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.ckpt")
	old := NewCheckpoint()
	old.Put("actor", []float64{1, 2, 3})
	require.NoError(t, WriteCheckpoint(path, old))
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	boom := errors.New("disk full")
	syncFile = func(*os.File) error { return boom }
	t.Cleanup(func() { syncFile = (*os.File).Sync })

	next := NewCheckpoint()
	next.Put("actor", []float64{9, 9, 9, 9})
	err = WriteCheckpoint(path, next)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), path)

	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "temporary file removed")

	c, err := ReadCheckpoint(path)
	require.NoError(t, err)
	v, _ := c.Get("actor")
	assert.Equal(t, []float64{1, 2, 3}, v)

	// Writing into a missing directory fails without creating anything.
	require.Error(t, WriteCheckpoint(filepath.Join(dir, "no", "such", "x"), old))
}
