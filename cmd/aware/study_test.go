package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStudyCommandRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWARE_TEST_INDEX", "4")
	t.Setenv("AWARE_S3_ENDPOINT", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"study", "--quick", "--full", "--out", dir}, "--quick and --full: choose one"},
		{[]string{"study", "nope", "--out", dir, "--pool", "20"}, `no study "nope" (known: characterisation, adaptation, serving, bootstrapping, alpha)`},
		{[]string{"study", "adaptation", "--shard", "5/4", "--out", dir}, "--shard: shard \"5/4\""},
		{[]string{"study", "serving", "--workers", "0", "--out", dir}, "--workers 0: must be positive"},
		{[]string{"study", "serving", "--trace", filepath.Join(dir, "missing.csv"), "--out", dir, "--pool", "20"}, "missing.csv"},
		{[]string{"study", "merge", "adaptation"}, "requires at least 2 arg(s)"},
		{[]string{"study", "merge", "adaptation", filepath.Join(dir, "nothing"), "--out", dir, "--pool", "20"}, "is not a study's folder"},
		{[]string{"study", "adaptation", "--arms", "PPO", "--out", dir, "--pool", "20"}, "optional arms: taken by bootstrapping, none of the studies named (adaptation)"},
		{[]string{"study", "bootstrapping", "--meta", dir, "--out", dir, "--pool", "20"}, "a meta-training folder: taken by adaptation, none of the studies named (bootstrapping)"},
		{[]string{"study", "bootstrapping", "--arms", "BCQ-phi9", "--out", dir, "--pool", "100", "--dry-run"}, "BCQ's perturbation bound Φ is a number in [0, 2]"},
		{[]string{"study", "bootstrapping", "--arms", "PPO", "--sim-episodes", "5", "--out", dir, "--pool", "100", "--dry-run"}, "only the PPO-fitted arm trains in one"},
		{[]string{"study", "adaptation", "--meta", filepath.Join(dir, "none"), "--out", dir, "--pool", "100"}, "no meta.ckpt"},
		{[]string{"study", "adaptation", "--shard-index-env", "AWARE_TEST_UNSET_INDEX", "--shards", "4", "--out", dir}, "$AWARE_TEST_UNSET_INDEX is not set"},
		{[]string{"study", "adaptation", "--shard-index-env", "AWARE_TEST_INDEX", "--shards", "4", "--out", dir}, `$AWARE_TEST_INDEX = "4": want a 0-based index below --shards 4`},
		{[]string{"study", "adaptation", "--shard-index-env", "AWARE_TEST_INDEX", "--out", dir}, "give both"},
		{[]string{"study", "adaptation", "--shard", "1/4", "--shards", "4", "--out", dir}, "--shard and --shard-index-env/--shards: choose one"},
		{[]string{"study", "bootstrapping", "--testbed", filepath.Join(dir, "no-testbed"), "--out", dir, "--pool", "100"}, "no running local testbed in"},
		{[]string{"study", "bootstrapping", "--testbed", dir, "--speedup", "15", "--out", dir}, "speed-up 15 is above 10"},
		{[]string{"study", "bootstrapping", "--speedup", "10", "--out", dir}, "--speedup: only with --testbed or --testbed-up"},
		{[]string{"study", "adaptation", "--testbed", dir, "--out", dir, "--pool", "100"}, "a testbed: taken by serving, bootstrapping, none of the studies named (adaptation)"},
		{[]string{"study", "bootstrapping", "--testbed", dir, "--shard", "1/2", "--out", dir}, "the testbed cells run all at once on one testbed"},
		{[]string{"study", "bootstrapping", "--testbed", dir, "--arms", "PPO", "--out", dir, "--pool", "100"}, "the optional arms [PPO] do not run on the testbed"},
		{[]string{"study", "merge", "bootstrapping", dir, "--speedup", "10", "--out", dir}, "--speedup: the testbed cells run unsharded"},
		{[]string{"study", "serving", "--results", dir, "--out", dir}, "--results: \"" + dir + "\": want s3://BUCKET/PREFIX"},
		{[]string{"study", "serving", "--results", "s3://aware/a//b", "--out", dir}, `--results: "s3://aware/a//b": prefix`},
		{[]string{"study", "merge", "serving", "s3://aware/studies/x", "--out", dir, "--pool", "20"}, "$AWARE_S3_ENDPOINT is not set"},
		{[]string{"study", "merge", "serving", "s3://aware/studies/x", "--results", "s3://aware/y", "--out", dir}, "unknown flag: --results"},
	} {
		_, err := runAware(t, tc.args...)
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
	t.Setenv("AWARE_TEST_INDEX", "1")
	out, err := runAware(t, "study", "adaptation", "--shard-index-env", "AWARE_TEST_INDEX", "--shards", "4", "--dry-run", "--out", dir, "--pool", "100")
	require.NoError(t, err)
	assert.Contains(t, out, "shard 2/4", "index 1 of an Indexed Job is the second shard")
	help, err := runAware(t, "study", "--help")
	require.NoError(t, err)
	assert.Contains(t, help, "aware study merge adaptation --full")
	assert.Contains(t, help, "--arms")
}
