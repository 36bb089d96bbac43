package faults

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
)

func TestConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.MPAs = 1001 }, "MPAs 1001: must be 1 to 1000"},
		{func(c *Config) { c.Step = 1500 * time.Millisecond }, "step 1.5s: whole seconds"},
		{func(c *Config) { c.EtcdPause = -time.Second }, "etcd pause -1s: negative"},
		{func(c *Config) { c.Faults = []string{"prometheus", "meteor"} }, `unknown fault "meteor"`},
		{func(c *Config) { c.Dir = "" }, "Config.Dir is required"},
		{func(c *Config) { c.Controller = nil }, "Config.Controller"},
	} {
		c := Config{Dir: "d", Controller: []string{"aware", "controller"}}
		tc.edit(&c)
		_, err := c.withDefaults()
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	c, err := Config{Dir: "d", Controller: []string{"aware"}}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 100, c.MPAs)
	assert.Equal(t, All, c.Faults)
}

func TestGapEpisodes(t *testing.T) {
	st := func(ep int64, tt int) trajectory.Step { return trajectory.Step{Episode: ep, T: tt} }
	assert.Equal(t, 0, gapEpisodes(map[string][]trajectory.Step{"a": {st(1, 3), st(1, 4), st(2, 0)}}), "an episode begun before the window")
	assert.Equal(t, 1, gapEpisodes(map[string][]trajectory.Step{"a": {st(1, 3), st(1, 5), st(2, 0)}, "b": {st(4, 0), st(4, 1)}}))
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	rep := Report{Rows: []Row{
		{Fault: "prometheus", MPAs: 100, Recorded: 2400, Recovery: 7460 * time.Millisecond, Note: "stopped"},
		{Fault: "sigkill", MPAs: 100, Recorded: 1900, StepsLost: 3, Failed: "3 of 1900 recorded steps are not in InfluxDB"},
	}}
	require.NoError(t, WriteTable(&b, rep))
	assert.Equal(t, `| fault | MPAs | steps recorded | steps lost | trajectories lost | recovery | wrong actions | refused requests | crashes | result |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
| prometheus | 100 | 2400 | 0 | 0 | 7.5s | 0 | 0 | 0 | ok |
| sigkill | 100 | 1900 | 3 | 0 | – | 0 | 0 | 0 | **FAILED**: 3 of 1900 recorded steps are not in InfluxDB |

- **prometheus**: stopped
`, b.String())
	assert.EqualError(t, rep.Err(), "sigkill: 3 of 1900 recorded steps are not in InfluxDB")
}

// TestFaultsShort runs the whole suite at a small size with short outages
// (20 MPAs, 3-second steps; Prometheus 15 s, InfluxDB 20 s, etcd 10 s, 3
// SIGKILLs, bad metrics 12 s, 200 MPAs in the burst): the representative subset of `make
// faults` that `make test` runs. Every fault must lose nothing, act on no
// stale data and crash nothing.
func TestFaultsShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane, Prometheus, InfluxDB and the controller")
	}
	clustertest.RequireBinary(t, "prometheus")
	clustertest.RequireBinary(t, "influxd")
	bins := clustertest.Binaries(t)
	dir := t.TempDir()
	aware := filepath.Join(dir, "aware")
	build := exec.Command("go", "build", "-o", aware, "../../cmd/aware")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "building the aware binary")
	ctx, cancel := context.WithTimeout(t.Context(), 12*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{MPAs: 20, Step: 3 * time.Second, PrometheusDown: 15 * time.Second, InfluxDown: 20 * time.Second,
		EtcdPause: 10 * time.Second, BadMetrics: 12 * time.Second, Burst: 200, Dir: filepath.Join(dir, "run"), Binaries: bins, Controller: []string{aware, "controller"}})
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, WriteTable(&b, rep))
	t.Log("\n" + b.String())
	require.Len(t, rep.Rows, len(All))
	for _, row := range rep.Rows {
		assert.Positive(t, row.Recorded, "%s: steps were recorded", row.Fault)
	}
	require.NoError(t, rep.Err())
}
