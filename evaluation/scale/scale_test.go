package scale

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
)

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestRunSmall runs the whole benchmark small on real parts: the local
// control plane, 20 generated apps with their MPAs, the twin scraped by a
// real Prometheus and the real `aware controller` process, two 5-second
// rounds. It checks that the measurements are sane, not the 1000-app
// targets.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane, Prometheus, the twin and the controller")
	}
	clustertest.RequireBinary(t, "prometheus")
	clustertest.RequireBinary(t, "go")
	bins := clustertest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin := clustertest.BuildAware(ctx, t, tmp)

	const apps, rounds = 20, 2
	// New pods (the controller scales up) need two scrapes before a rate
	// over one step exists; a shorter step than 5 s with 1 s scrapes would
	// hold their MPAs' next step.
	const step = 5 * time.Second
	dir := filepath.Join(tmp, "bench")
	res, err := Run(ctx, Config{
		Apps: apps, Nodes: 2, Step: step, Rounds: rounds, Scrape: time.Second, Tick: time.Second,
		Dir: dir, Binaries: bins, Controller: []string{bin, "controller"},
		Log: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	if err != nil {
		ctlLog, _ := os.ReadFile(filepath.Join(dir, "controller.log"))
		t.Fatalf("Run: %v\ncontroller log:\n%s", err, ctlLog)
	}
	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, res))
	t.Logf("\n%s", table.String())

	assert.Equal(t, apps, res.Apps)
	assert.Equal(t, step, res.Step)
	assert.GreaterOrEqual(t, res.Pods, apps, "every app has a Running pod")
	assert.Equal(t, apps, res.WithMetrics, "every MPA has fresh metrics at the end")
	require.Len(t, res.Rounds, rounds)
	for i, rd := range res.Rounds {
		assert.True(t, rd.Reported, "round %d reported by the controller", i+1)
		assert.True(t, rd.Complete, "round %d: %d/%d MPAs", i+1, rd.Steps, rd.Want)
		assert.Equal(t, apps, rd.Steps, "round %d: one step per MPA", i+1)
		assert.Positive(t, rd.Duration, "round %d", i+1)
		assert.Less(t, rd.Duration, step, "round %d fits in a step", i+1)
		assert.Equal(t, apps, rd.Written+rd.Unchanged, "round %d: every step's status written or left", i+1)
		assert.Zero(t, rd.Start.Sub(rd.Start.Truncate(step)), "round %d starts on a step boundary", i+1)
		if i > 0 {
			assert.Equal(t, step, rd.Start.Sub(res.Rounds[i-1].Start), "consecutive rounds")
		}
	}
	assert.GreaterOrEqual(t, res.Window, rounds*step-100*time.Millisecond, "the window spans the rounds")
	assert.Less(t, res.Window, (rounds+2)*step, "the window ends with the last round")
	assert.Positive(t, res.CPU, "the controller used CPU")
	assert.Less(t, res.CPU, 2.0, "at most the machine's cores")
	assert.GreaterOrEqual(t, res.CPUPeak, 0.0)
	assert.Positive(t, res.RSSMax, "RSS sampled")
	// VmHWM is the peak, but the kernel's per-CPU RSS counters make both
	// figures approximate by up to a few hundred KiB.
	assert.GreaterOrEqual(t, res.HWM+(1<<20), res.RSSMax, "VmHWM is the peak")
	assert.Positive(t, res.HostCores)
	assert.Positive(t, res.HostCPU, "the machine was busy")
	names := map[string]float64{}
	for _, p := range res.Processes {
		names[p.Name] = p.Cores
	}
	for _, name := range []string{"controller", "bench (twin, watch)", "kube-apiserver", "etcd", "kwok", "prometheus"} {
		assert.Contains(t, names, name, "CPU of %s", name)
	}
	assert.InDelta(t, res.CPU, names["controller"], 0.02, "the same process, the same window")
	assert.Zero(t, sum(res.Errors), "controller errors in the window: %v", res.Errors)
	assert.Zero(t, res.Refused, "requests refused by RBAC (first: %s)", res.FirstRefused)
	assert.GreaterOrEqual(t, res.Steps, float64(rounds*apps), "one step per MPA per round")
	assert.Positive(t, res.StepMean)
	assert.Positive(t, sum(res.Requests), "API requests counted")
	assert.Positive(t, res.Setup.Cluster)
	assert.Positive(t, res.Setup.Warmup)
	assert.Contains(t, table.String(), "round 2")
	assert.Contains(t, table.String(), "complete rounds p50, p95, max (2 of 2)")
	assert.FileExists(t, filepath.Join(dir, "controller.log"))
}

// TestRunSmallWithAgents runs the benchmark with the agent runner on real
// parts (InfluxDB too): 5 apps whose bootstrapping agents go ONLINE after
// one 2-step episode, two rounds. It checks the runner's figures are
// there and sane, not the 1000-app targets.
func TestRunSmallWithAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane, Prometheus, InfluxDB, the twin, the controller and the agent runner")
	}
	clustertest.RequireBinary(t, "prometheus")
	clustertest.RequireBinary(t, "influxd")
	clustertest.RequireBinary(t, "go")
	bins := clustertest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin := clustertest.BuildAware(ctx, t, tmp)
	const apps, rounds, step = 5, 2, 5 * time.Second
	dir := filepath.Join(tmp, "bench")
	res, err := Run(ctx, Config{
		Apps: apps, Nodes: 2, Step: step, Rounds: rounds, Scrape: time.Second, Tick: time.Second,
		Dir: dir, Binaries: bins, Controller: []string{bin, "controller"}, Agents: []string{bin, "agents"},
		AgentEpisode: 2, AgentWindow: 1,
		Log: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	if err != nil {
		ctlLog, _ := os.ReadFile(filepath.Join(dir, "controller.log"))
		runLog, _ := os.ReadFile(filepath.Join(dir, runnerLog))
		t.Fatalf("Run: %v\ncontroller log:\n%s\nagent runner log:\n%s", err, ctlLog, runLog)
	}
	var table bytes.Buffer
	require.NoError(t, WriteTable(&table, res))
	t.Logf("\n%s", table.String())
	require.NotNil(t, res.Agents)
	a := res.Agents
	assert.Equal(t, float64(apps), a.Hosted, "one agent per MPA")
	assert.Positive(t, a.CPU, "the runner used CPU")
	assert.InDelta(t, a.CPU, a.Training+a.Acting, 1e-9)
	assert.Positive(t, a.RSSMax)
	assert.Positive(t, a.HWM)
	names := map[string]bool{}
	for _, p := range res.Processes {
		names[p.Name] = true
	}
	assert.True(t, names["agent runner"], "the runner's CPU in the breakdown")
	assert.True(t, names["influxd"], "InfluxDB's CPU in the breakdown")
	assert.Contains(t, table.String(), "agent steps by stage")
	assert.Len(t, res.Rounds, rounds)
}
