package baselines

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/generator"
)

func generateConfig(dir string) GenerateConfig {
	opts := generator.DefaultOptions()
	opts.Apps, opts.Seed = 20, 3
	return GenerateConfig{Options: opts, Out: dir, Manifests: true, ManifestOptions: generator.DefaultManifestOptions(),
		Traces: filepath.Join(dir, "no-traces"), Step: 30 * time.Second, Tune: Tuning{Window: 2 * time.Hour, Warmup: 10 * time.Minute, MaxViolations: 0.01}}
}

func TestGeneratePool(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, GeneratePool(context.Background(), generateConfig(dir), &out))
	assert.Contains(t, out.String(), "| 20 | 16 | 4 |")
	assert.Contains(t, out.String(), "| 20 | ", "the tuning table counts 20 tuned apps")
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
}

func TestGenerateConfigValidate(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		set  func(*GenerateConfig)
		want []string
	}{
		{func(c *GenerateConfig) { c.Options.Apps = 0 }, []string{"--apps: 0 must be positive"}},
		{func(c *GenerateConfig) { c.Options.MaxSegments = 0 }, []string{"--max-segments: 0 must be positive"}},
		{func(c *GenerateConfig) { c.Options.TrainFraction = 2 }, []string{"--train-fraction: 2 is not in [0, 1]"}},
		{func(c *GenerateConfig) { c.Out = "" }, []string{"--out: an output directory is required"}},
		{func(c *GenerateConfig) { c.ManifestOptions.UpdateMode = v1alpha1.UpdateMode("Sometimes") }, []string{`--update-mode: "Sometimes"`}},
		{func(c *GenerateConfig) { c.Tune.Window = 10 * time.Second }, []string{"--tune-window 10s"}},
		{func(c *GenerateConfig) { c.Out, c.Options.Apps = "", -1 }, []string{"--out: an output directory is required", "--apps: -1 must be positive"}},
	} {
		cfg := generateConfig(dir)
		tc.set(&cfg)
		err := cfg.Validate()
		for _, w := range tc.want {
			assert.ErrorContains(t, err, w)
		}
	}
	cfg := generateConfig(dir)
	cfg.Profile = "/nonexistent/profile.json"
	assert.ErrorContains(t, GeneratePool(context.Background(), cfg, &bytes.Buffer{}), "--profile:")
}
