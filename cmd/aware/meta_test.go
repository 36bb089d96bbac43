package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetaCommands runs the smallest meta-training and its evaluation
// through the commands: the flags reach the run (evaluation/metalearn
// tests the runs themselves).
func TestMetaCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the default-size meta learner")
	}
	dir := t.TempDir()
	pool := []string{"--pool", "100", "--traces", filepath.Join(dir, "no-traces")}
	out, err := runAware(t, append([]string{"meta", "train", "--apps", "2", "--rounds", "1", "--m", "2", "--seed", "3", "--contrast-every", "1",
		"--contrast-tasks", "2", "--contrast-views", "1", "--out", dir}, pool...)...)
	require.NoError(t, err)
	assert.Contains(t, out, "on 2 train-split applications × 1 rounds, seed 3, into "+dir)
	assert.FileExists(t, filepath.Join(dir, "rounds.jsonl"))
	out, err = runAware(t, append([]string{"meta", "eval", "--from", dir, "--apps", "2", "--episodes", "1", "--m", "2", "--windows", "shift"}, pool...)...)
	require.NoError(t, err)
	assert.Contains(t, out, "on 2 test-split applications, bundles of 1 greedy episodes, query window 12h0m0s (1440 steps) after the reference")
	b, err := os.ReadFile(filepath.Join(dir, "eval.md"))
	require.NoError(t, err)
	assert.Equal(t, out, string(b))
}

func TestMetaCommandsRefuseBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"meta", "train", "--apps", "0", "--out", dir}, "--apps 0, --rounds 20 and --m 20 must be positive"},
		{[]string{"meta", "train", "--meta-lr", "-1", "--out", dir}, "--meta-lr -1 must be finite and not negative"},
		{[]string{"meta", "train", "--validate", "1", "--out", dir}, "--validate 1 (0, or at least 2 applications)"},
		{[]string{"meta", "train", "--actions", "sideways", "--out", dir}, `invalid argument "sideways" for "--actions"`},
		{[]string{"meta", "eval", "--windows", "noon", "--from", dir}, `windows "noon": want random or shift`},
		{[]string{"meta", "eval", "--apps", "1", "--from", dir}, "--apps 1 (at least 2)"},
		{[]string{"meta", "eval", "--from", dir, "--pool", "20"}, "no meta.ckpt (run aware meta train first)"},
		{[]string{"meta", "adapt"}, `unknown command "adapt" for "aware meta"`},
		{[]string{"bootstrap"}, `unknown command "bootstrap"`},
	} {
		_, err := runAware(t, tc.args...)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
}
