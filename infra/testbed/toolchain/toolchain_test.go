package toolchain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionsValidate(t *testing.T) {
	require.NoError(t, DefaultVersions().Validate())
	err := Versions{CLI: "3.274.1", Kubernetes: "v4.33.0", KubernetesModule: "v3.0.0"}.Validate()
	require.Error(t, err)
	for _, want := range []string{`CLI version "3.274.1"`, `provider version "v4.33.0"`, `module version "v3.0.0"`} {
		assert.Contains(t, err.Error(), want)
	}
}

// The provider's embedded schema carries the plugin's version: the engine
// checks it against the version the SDK asks for.
func TestRewriteJSON(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "schema.json")
	require.NoError(t, os.WriteFile(src, []byte("{\n  \"name\": \"kubernetes\",\n  \"version\": \"0.0.0\",\n  \"resources\": {\"a\": 1}\n}\n"), 0o644))
	dst := filepath.Join(dir, "schema-embed.json")
	require.NoError(t, rewriteJSON(src, dst, "4.33.0"))
	b, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "\n", "compact")
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, map[string]any{"name": "kubernetes", "version": "4.33.0", "resources": map[string]any{"a": float64(1)}}, got)

	require.NoError(t, rewriteJSON(src, dst, ""))
	require.NoError(t, json.Unmarshal(mustRead(t, dst), &got))
	assert.Equal(t, "0.0.0", got["version"], "kept without a version")

	require.NoError(t, os.WriteFile(src, []byte("not json"), 0o644))
	err = rewriteJSON(src, dst, "1.0.0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), src)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}
