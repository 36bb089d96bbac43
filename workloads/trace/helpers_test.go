package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// sharedTraces returns the directory of the shared real traces
// (../shared/traces from the module root) or skips the test when it is
// absent. When it exists but cannot be read, the test fails under CI=true.
func sharedTraces(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("module root (go.mod) not found; cannot locate ../shared/traces")
		}
		dir = parent
	}
	traces := filepath.Join(dir, "..", "shared", "traces")
	_, err = os.ReadDir(traces)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Skipf("shared traces not present at %s (they are not part of a fresh clone)", traces)
	case err != nil && os.Getenv("CI") == "true":
		t.Fatalf("shared traces at %s unreadable: %v", traces, err)
	case err != nil:
		t.Skipf("shared traces at %s unreadable: %v", traces, err)
	}
	return traces
}

// gz compresses b.
func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// writeFile writes data to name in a temporary directory and returns its path.
func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

// checkSeries asserts what every loader promises: a positive step and
// finite non-negative values.
func checkSeries(t testing.TB, s Series) {
	t.Helper()
	require.NoError(t, s.Validate())
}
