package generator_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/generator"
)

// TestSimEnvsErrors: a bad selection is refused naming the flag.
func TestSimEnvsErrors(t *testing.T) {
	base := generator.EnvConfig{Apps: 1, PoolSeed: 1, Traces: filepath.Join(t.TempDir(), "none"), Step: 30 * time.Second, Episode: 100, Seed: 1}
	for _, tc := range []struct {
		name string
		edit func(*generator.EnvConfig)
		want string
	}{
		{"no apps", func(c *generator.EnvConfig) { c.Apps = 0 }, "--apps 0: must be at least 1"},
		{"bad app name", func(c *generator.EnvConfig) { c.Names = []string{"frontend"} }, `--app "frontend": want a pool name like app-0001`},
		{"app not in the pool", func(c *generator.EnvConfig) { c.Names = []string{"app-1001"} }, `--app "app-1001": not in the pool`},
		{"app twice", func(c *generator.EnvConfig) { c.Names = []string{"app-0002", "app-0002"} }, "--app app-0002 is given twice"},
		{"bad episode", func(c *generator.EnvConfig) { c.Episode = 0 }, "--episode 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			_, err := generator.SimEnvs(c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestSimEnvs builds two named applications of the pool with synthetic
// load (the traces folder is absent) and steps one through an episode.
func TestSimEnvs(t *testing.T) {
	envs, err := generator.SimEnvs(generator.EnvConfig{Names: []string{"app-0003", "app-0001"}, PoolSeed: 1,
		Traces: filepath.Join(t.TempDir(), "no-traces"), Step: 30 * time.Second, Episode: 5, Seed: 1})
	require.NoError(t, err)
	require.Len(t, envs, 2)
	e := envs["app-0003"]
	require.NotNil(t, e)
	require.NotNil(t, envs["app-0001"])
	ctx := context.Background()
	obs, _, err := e.Reset(ctx, 4)
	require.NoError(t, err)
	assert.Len(t, obs, e.ObservationSpace().Dim())
	truncated := 0
	for range 10 {
		_, r, _, trunc, info, err := e.Step(ctx, []float64{2, 0.5, 1 << 30})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, r, 0.0)
		assert.Equal(t, 2, info.Metrics.Replicas)
		if trunc {
			truncated++
		}
	}
	assert.Equal(t, 2, truncated, "Episode 5")
}
