package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEvaluationCommandsRefuseBadFlags: the evaluation commands name each
// bad flag before they do any work (their packages test the work).
func TestEvaluationCommandsRefuseBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--apps", "0"}, "--apps 0: must be positive"},
		{[]string{"run", "--step", "10m", "--duration", "1m"}, "--step 10m0s and --duration 1m0s"},
		{[]string{"run", "--baselines", "nope", "--out", out}, "--baselines [nope]: none known"},
		{[]string{"run", "--tune-window", "1h", "--tune-warmup", "1h"}, "--tune-window 1h0m0s and --tune-warmup 1h0m0s"},
		{[]string{"run", "--tune-max-violations", "1"}, "--tune-max-violations 1: not in [0, 1)"},
		{[]string{"run", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"train", "--algo", "sarsa"}, `--algo: train: unknown algorithm "sarsa"`},
		{[]string{"train", "--app", "web"}, `--app "web": want a pool name like app-0001`},
		{[]string{"train", "--episodes", "-1"}, "--episodes -1: must be positive"},
		{[]string{"train", "--plot", "curve.gif"}, "--plot:"},
		{[]string{"compare", "--apps", "0"}, "--apps 0: must be positive"},
		{[]string{"compare", "--algos", "ddpg", "--episodes", "ppo=3"}, `--episodes: "ppo" is not among --algos ddpg`},
		{[]string{"compare", "--scored", "0"}, "--scored 0: must be positive"},
		{[]string{"sim", "validate", "--repeats", "0"}, "--repeats 0: must be at least 1"},
		{[]string{"sim", "validate", "--n", "0"}, "--n 0: must be positive"},
		{[]string{"sim", "validate", "--replay", filepath.Join(out, "none")}, "--replay:"},
		{[]string{"faults", "--mpas", "x"}, `invalid argument "x" for "--mpas"`},
		{[]string{"bench", "controller", "--rounds", "x"}, `invalid argument "x" for "--rounds"`},
	} {
		_, err := runAware(t, tc.args...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
	assert.NoDirExists(t, out, "a bad flag writes nothing")
}

// TestSimValidateSimulateOnly: the CLI maps its flags onto
// validation.Config (--recalibrate stays off with --simulate-only).
func TestSimValidateSimulateOnly(t *testing.T) {
	out, err := runAware(t, "sim", "validate", "--simulate-only", "--n", "2", "--window", "5s", "--traces", filepath.Join(t.TempDir(), "none"))
	require.NoError(t, err)
	assert.Contains(t, out, "replaying a synthetic day instead")
	assert.Contains(t, out, "| app-0002 | 1.00 | synthetic |")
}
