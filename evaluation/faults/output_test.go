package faults

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplaceSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reliability.md")
	require.NoError(t, os.WriteFile(path, []byte("# head\n<!-- faults:begin -->\nold table\n<!-- faults:end -->\ntail\n"), 0o644))
	require.NoError(t, replaceSection(path, "faults", "new table\n"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "# head\n<!-- faults:begin -->\nnew table\n<!-- faults:end -->\ntail\n", string(b))

	require.NoError(t, os.WriteFile(path, []byte("<!-- faults:end --> <!-- faults:begin -->"), 0o644))
	assert.ErrorContains(t, replaceSection(path, "faults", "x"), "no <!-- faults:begin --> … <!-- faults:end --> section")
	assert.Error(t, replaceSection(filepath.Join(t.TempDir(), "absent.md"), "faults", "x"))

	// Through a symbolic link, the file it names is replaced, its mode kept.
	dir := t.TempDir()
	doc, link := filepath.Join(dir, "doc.md"), filepath.Join(dir, "link.md")
	require.NoError(t, os.WriteFile(doc, []byte("<!-- faults:begin -->\n<!-- faults:end -->\n"), 0o600))
	require.NoError(t, os.Symlink("doc.md", link))
	require.NoError(t, replaceSection(link, "faults", "table\n"))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link is kept")
	b, err = os.ReadFile(doc)
	require.NoError(t, err)
	assert.Equal(t, "<!-- faults:begin -->\ntable\n<!-- faults:end -->\n", string(b))
	fi, err = os.Stat(doc)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}
