package validation

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// simulateOnly is `aware sim validate --simulate-only` on n generated
// apps with the command's defaults otherwise.
func simulateOnly(t *testing.T, n int) Config {
	return Config{N: n, PoolSeed: 1, CPUs: []float64{0.5, 1}, Utilisations: []float64{0.6, 0.4}, Window: 5 * time.Second, Warmup: 3 * time.Second,
		MaxRate: 1500, Traces: filepath.Join(t.TempDir(), "none"), Services: "local", Seed: 1, SimulateOnly: true,
		Overheads: true, Pin: true, Repeats: 1, ServiceCores: -1}
}

func TestRunSimulateOnly(t *testing.T) {
	var out bytes.Buffer
	cfg := simulateOnly(t, 2)
	cfg.Out = t.TempDir()
	require.NoError(t, Run(context.Background(), cfg, &out, &bytes.Buffer{}))
	assert.Contains(t, out.String(), "replaying a synthetic day instead")
	assert.Contains(t, out.String(), "| app-0002 | 1.00 | synthetic |")
	assert.NotContains(t, out.String(), "Median absolute percentage error", "nothing to compare without real runs")
	for _, f := range []string{"validation.md", "validation.json", "profile.json"} {
		_, err := os.Stat(filepath.Join(cfg.Out, f))
		assert.NoError(t, err, f)
	}

	// --replay re-simulates the recorded cases: the same simulated side.
	var again bytes.Buffer
	re := Config{Replay: cfg.Out, Repeats: 1, ServiceCores: -1}
	require.NoError(t, Run(context.Background(), re, &again, &bytes.Buffer{}))
	assert.Contains(t, again.String(), "app-0002")
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Repeats = 0 }, "--repeats 0: must be at least 1"},
		{func(c *Config) { c.N = 0 }, "--n 0: must be positive"},
		{func(c *Config) { c.Replay = "/nonexistent" }, "--replay:"},
		{func(c *Config) { c.Replay = t.TempDir() }, "--replay:"},
		{func(c *Config) { c.Apps = []string{"/nonexistent/app.yaml"} }, "--app:"},
	} {
		cfg := simulateOnly(t, 1)
		tc.set(&cfg)
		assert.ErrorContains(t, Run(context.Background(), cfg, &bytes.Buffer{}, &bytes.Buffer{}), tc.want)
	}
	cfg := simulateOnly(t, 0)
	cfg.Replay = "somewhere"
	assert.NoError(t, cfg.Validate(), "--n does not matter with --replay")
}
