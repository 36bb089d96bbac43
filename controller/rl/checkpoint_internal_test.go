package rl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A checkpoint is replaced whole (internal/atomicfile tests a write failing
// midway); an unreadable one is refused.
func TestWriteCheckpointAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.ckpt")
	old := NewCheckpoint()
	old.Put("actor", []float64{1, 2, 3})
	require.NoError(t, WriteCheckpoint(path, old))
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	next := NewCheckpoint()
	next.Put("actor", []float64{9, 9, 9, 9})
	require.NoError(t, WriteCheckpoint(path, next))
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotEqual(t, before, after)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")

	c, err := ReadCheckpoint(path)
	require.NoError(t, err)
	v, _ := c.Get("actor")
	assert.Equal(t, []float64{9, 9, 9, 9}, v)

	require.NoError(t, os.WriteFile(path, before[:len(before)/2], 0o600))
	_, err = ReadCheckpoint(path)
	require.Error(t, err, "a torn checkpoint is refused")

	// Writing into a missing directory fails without creating anything.
	require.Error(t, WriteCheckpoint(filepath.Join(dir, "no", "such", "x"), old))
}
