package toolchain

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// The testbed builds its toolchain on first use, saying so in one line,
// and finds it at once afterwards.
func TestEnsureBuildsOnFirstUse(t *testing.T) {
	dir, v := t.TempDir(), DefaultVersions()
	var calls int
	install := func(_ context.Context, cache string, got Versions, _ io.Writer) (Tools, error) {
		calls++
		assert.Equal(t, dir, cache)
		assert.Equal(t, v, got)
		// What the build leaves in the cache.
		for _, p := range []string{filepath.Join(cache, "pulumi-"+v.CLI, "bin", "pulumi"), filepath.Join(cache, "pulumi-resource-kubernetes-"+v.Kubernetes, "pulumi-resource-kubernetes")} {
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
		}
		return Tools{Versions: got}, nil
	}
	var log strings.Builder
	_, err := ensure(t.Context(), dir, v, &log, install)
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	assert.Equal(t, BuildNotice(dir, v)+"\n", log.String(), "one line before the build")
	assert.Contains(t, log.String(), "Pulumi CLI "+v.CLI+" and Kubernetes provider "+v.Kubernetes)
	assert.Contains(t, log.String(), "about 3 minutes, the provider about 6")

	log.Reset()
	tools, err := ensure(t.Context(), dir, v, &log, install)
	require.NoError(t, err)
	assert.Equal(t, 1, calls, "built once")
	assert.Empty(t, log.String(), "nothing to say when the tools are there")
	assert.Equal(t, filepath.Join(dir, "pulumi-"+v.CLI, "bin", "pulumi"), tools.Pulumi)

	_, err = cached(t.Context(), t.TempDir(), v)
	assert.ErrorIs(t, err, ErrNotBuilt)
}
