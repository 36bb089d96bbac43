package database

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindBinDir(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []string{"initdb", "postgres"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, b), nil, 0o755))
	}
	t.Setenv(EnvBinDir, dir)
	got, err := findBinDir()
	require.NoError(t, err)
	assert.Equal(t, dir, got)

	require.NoError(t, os.Remove(filepath.Join(dir, "postgres")))
	_, err = findBinDir()
	require.ErrorIs(t, err, ErrNoBinary)
	assert.ErrorContains(t, err, "postgres")
}

// TestEnsureReachable needs root: it checks what the postgres user can
// reach.
func TestEnsureReachable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: only root hands directories to the postgres user")
	}
	acct, err := serverAccount()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	base := t.TempDir()
	tmp := filepath.Join(base, "tmp")
	require.NoError(t, os.MkdirAll(tmp, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o711)) // testing's own 0700 parent
	require.NoError(t, os.Chmod(base, 0o755))
	t.Setenv("TMPDIR", tmp)

	// Under the temp dir, a 0700 directory gets o+x (search only).
	locked := filepath.Join(tmp, "locked")
	target := filepath.Join(locked, "pg")
	require.NoError(t, os.MkdirAll(target, 0o755))
	require.NoError(t, os.Chmod(locked, 0o700))
	require.NoError(t, acct.ensureReachable(target))
	fi, err := os.Stat(locked)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o701), fi.Mode().Perm())

	// Outside the temp dir nothing is changed; the error names the
	// directory to fix.
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "pg"), 0o755))
	require.NoError(t, os.Chmod(outside, 0o700))
	err = acct.ensureReachable(filepath.Join(outside, "pg"))
	require.ErrorContains(t, err, "directory "+outside+" (mode 0700) is not searchable")
	fi, err = os.Stat(outside)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}
