package agents

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStateRoundTripAndQuarantine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ns", "app-uid")
	_, err := ReadState(dir)
	require.ErrorIs(t, err, fs.ErrNotExist)

	require.NoError(t, os.MkdirAll(dir, 0o755))
	want := State{UID: "uid", MPA: "ns/app", Stage: "ONLINE", Episode: 7, Episodes: 3, Steps: 40, Updates: 39,
		RecordsUntil: time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC), Saved: time.Date(2026, 11, 26, 1, 2, 0, 0, time.UTC)}
	require.NoError(t, writeState(dir, want))
	got, err := ReadState(dir)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	left, err := filepath.Glob(filepath.Join(dir, "*.tmp*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary file left")

	require.NoError(t, os.WriteFile(filepath.Join(dir, stateFile), []byte("{not json"), 0o644))
	_, err = ReadState(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), stateFile)

	now := time.Unix(1700000000, 5)
	to, err := quarantine(dir, now)
	require.NoError(t, err)
	assert.Equal(t, dir+".unreadable-1700000000000000005", to)
	b, err := os.ReadFile(filepath.Join(to, stateFile))
	require.NoError(t, err, "the unreadable checkpoint is kept")
	assert.Equal(t, "{not json", string(b))
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
