package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/generator"
)

func runAware(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestGenerateCommand(t *testing.T) {
	dir := t.TempDir()
	out, err := runAware(t, "generate", "--apps", "20", "--seed", "3", "--out", dir, "--manifests",
		"--traces", filepath.Join(dir, "no-traces"), "--tune-window", "2h", "--tune-warmup", "10m")
	require.NoError(t, err)
	assert.Contains(t, out, "| 20 | 16 | 4 |")
	assert.Contains(t, out, "| 20 | ", "the tuning table counts 20 tuned apps")
	apps, err := generator.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, apps, 20)
	for _, a := range apps {
		require.NotNil(t, a.Tuning, a.Name())
		assert.Equal(t, "2h0m0s", a.Tuning.Window)
	}
	_, err = os.Stat(filepath.Join(dir, "summary.md"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "manifests", "app-0020.yaml"))
	require.NoError(t, err)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--apps", "0", "--out", dir}, "--apps: 0 must be positive"},
		{[]string{"--max-segments", "0", "--out", dir}, "--max-segments: 0 must be positive"},
		{[]string{"--apps", "5"}, "--out: an output directory is required"},
		{[]string{"--out", dir, "--update-mode", "Sometimes"}, `--update-mode: "Sometimes"`},
		{[]string{"--out", dir, "--profile", "/nonexistent/profile.json"}, "--profile:"},
		{[]string{"--out", dir, "--tune-window", "10s"}, "--tune-window 10s"},
	} {
		_, err := runAware(t, append([]string{"generate"}, tc.args...)...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}
