package demo_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/demo"
	"github.com/aware-autoscaler/aware/workloads/loadgen"
	"github.com/aware-autoscaler/aware/workloads/services"
)

// TestRunReplay runs the demo's replay (the calibration measures in child
// processes of the aware binary, so it is left to the CLI) on the light
// app without services.
func TestRunReplay(t *testing.T) {
	cfg := demo.Config{Services: services.None, App: "light", Trace: loadgen.TraceConstant, Rate: 20, Duration: 500 * time.Millisecond, Speed: 1, Seed: 1}
	var out, progress bytes.Buffer
	require.NoError(t, demo.Run(context.Background(), cfg, &out, &progress))
	assert.Contains(t, out.String(), "== Trace replay: app light (1 segments), constant trace, 500ms window at 20 req/s mean, speed 1, 10 arrivals")
	assert.Contains(t, out.String(), "server counters: received 10, processed 10, failed 0")
	assert.Empty(t, progress.String())
}

func TestRunErrors(t *testing.T) {
	base := demo.Config{Services: services.None, App: "light", Trace: loadgen.TraceConstant, Rate: 20, Duration: time.Second, Speed: 1, Seed: 1}
	for _, tc := range []struct {
		name string
		edit func(*demo.Config)
		want string
	}{
		{"services", func(c *demo.Config) { c.Services = "cloud" }, `--services "cloud": want local, env or none`},
		{"app", func(c *demo.Config) { c.App = "nope" }, `--app "nope": neither a built-in example nor a readable spec`},
		{"app needs services", func(c *demo.Config) { c.App = "mixed" }, `--app mixed needs an object store or database, but --services is "none"`},
		{"trace", func(c *demo.Config) { c.Trace, c.Duration = loadgen.TraceSynthetic, 0 }, "--duration 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.edit(&c)
			assert.ErrorContains(t, demo.Run(context.Background(), c, &bytes.Buffer{}, &bytes.Buffer{}), tc.want)
		})
	}
}
