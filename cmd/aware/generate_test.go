package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func runAware(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestGenerateRefusesBadFlags: `aware generate` names each bad flag
// (evaluation/baselines tests the generation itself).
func TestGenerateRefusesBadFlags(t *testing.T) {
	dir := t.TempDir()
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
		{[]string{"--out", dir, "--apps", "many"}, `invalid argument "many" for "--apps"`},
	} {
		_, err := runAware(t, append([]string{"generate"}, tc.args...)...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}
