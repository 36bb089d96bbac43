package local

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	client "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/infra/localproc"
	"github.com/aware-autoscaler/aware/infra/prometheus"
)

// TestConfigTwinClock: the twin ticks every min(1s, step/3) and advances
// tick × time scale per tick, a whole number of seconds or refused.
func TestConfigTwinClock(t *testing.T) {
	tests := []struct {
		step      time.Duration
		k         float64
		tick, sim time.Duration
		err       string
	}{
		{15 * time.Second, DefaultTimeScale, time.Second, 10 * time.Second, ""}, // the default: today's clock
		{15 * time.Second, 1, time.Second, time.Second, ""},
		{3 * time.Second, 10, time.Second, 10 * time.Second, ""},
		{2 * time.Second, 15, 666666666 * time.Nanosecond, 10 * time.Second, ""}, // 30 s steps at 15×
		{1500 * time.Millisecond, 2, 500 * time.Millisecond, time.Second, ""},
		{2 * time.Second, 10, 0, 0, "--step 2s and --time-scale 10: the twin ticks every 666.666666ms (a third of the step, at most 1s) and so advances 6.667s per tick"},
		{time.Second, 2, 0, 0, "--step 1s and --time-scale 2: the twin ticks every 333.333333ms"},
		{15 * time.Second, 0.5, 0, 0, "advances 500ms per tick, which must be a whole number of seconds, at least 1s"},
		{15 * time.Second, 2.5, 0, 0, "--time-scale 2.5"},
		{15 * time.Second, 0, 0, 0, "--time-scale 0: want a positive finite number"},
		{15 * time.Second, math.Inf(1), 0, 0, "--time-scale +Inf"},
		{15 * time.Second, math.NaN(), 0, 0, "--time-scale NaN"},
		{500 * time.Millisecond, 10, 0, 0, "--step 500ms: the controller's step must be at least 1s"},
	}
	for _, tc := range tests {
		tick, sim, err := TwinClock(tc.step, tc.k)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "step %s, k %g", tc.step, tc.k)
			continue
		}
		require.NoError(t, err, "step %s, k %g", tc.step, tc.k)
		assert.Equal(t, tc.tick, tick, "step %s, k %g", tc.step, tc.k)
		assert.Equal(t, tc.sim, sim, "step %s, k %g", tc.step, tc.k)
	}
}

// TestRegisterTarget: the file is Prometheus's file_sd format, replaced
// by a second registration, removed by unregister (twice is fine); bad
// names, groups and a missing directory are refused.
func TestRegisterTarget(t *testing.T) {
	dir := t.TempDir()
	groups := []FileTarget{{Targets: []string{"127.0.0.1:9100"}, Labels: map[string]string{"__metrics_path__": "/metrics/shard/0", "instance": "cell-1"}}}
	unregister, err := RegisterTarget(dir, "cell-1", groups)
	require.NoError(t, err)
	path := filepath.Join(dir, "cell-1.json")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"targets":["127.0.0.1:9100"],"labels":{"__metrics_path__":"/metrics/shard/0","instance":"cell-1"}}]`, string(b))

	_, err = RegisterTarget(dir, "cell-1", []FileTarget{{Targets: []string{"127.0.0.1:9200", "127.0.0.1:9201"}}})
	require.NoError(t, err)
	var got []FileTarget
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, []FileTarget{{Targets: []string{"127.0.0.1:9200", "127.0.0.1:9201"}}}, got, "registered again: replaced")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")

	require.NoError(t, unregister())
	assert.NoFileExists(t, path)
	require.NoError(t, unregister(), "a file already gone")

	for _, tc := range []struct {
		dir, name string
		groups    []FileTarget
		err       string
	}{
		{dir, "", groups, `scrape target name ""`},
		{dir, "../escape", groups, `scrape target name "../escape"`},
		{dir, ".hidden", groups, `scrape target name ".hidden"`},
		{dir, "a/b", groups, `scrape target name "a/b"`},
		{dir, "none", nil, "scrape target none: no target groups"},
		{dir, "empty", []FileTarget{{}}, "scrape target empty: group 0 has no targets"},
		{dir, "port", []FileTarget{{Targets: []string{"127.0.0.1"}}}, `group 0: address "127.0.0.1" is not host:port`},
		{filepath.Join(dir, "missing"), "x", groups, "the targets directory (is the testbed up?)"},
	} {
		_, err := RegisterTarget(tc.dir, tc.name, tc.groups)
		assert.ErrorContains(t, err, tc.err, tc.name)
	}
}

// TestRegisterTargetScrapedByStudyJob: a Prometheus with the supervisor's
// study job scrapes a registered target at the path and with the instance
// its labels give, and stops when it is unregistered.
func TestRegisterTargetScrapedByStudyJob(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts Prometheus")
	}
	reg := client.NewRegistry()
	g := client.NewGauge(client.GaugeOpts{Name: "aware_test_study", Help: "test gauge"})
	g.Set(7)
	reg.MustRegister(g)
	mux := http.NewServeMux()
	mux.Handle("/metrics/shard/0", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	targets := filepath.Join(t.TempDir(), TargetsDir)
	require.NoError(t, os.MkdirAll(targets, 0o755))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p, err := prometheus.Start(ctx, t.TempDir(), prometheus.WithScrapeConfigYAML(studyJob(targets)), prometheus.WithScrapeInterval(250*time.Millisecond))
	if errors.Is(err, prometheus.ErrNoBinary) && os.Getenv("CI") != "true" {
		t.Skipf("prometheus not installed; run ci/setup.sh: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, p.Stop())
		if t.Failed() {
			t.Logf("prometheus log:\n%s", localproc.FileTail(p.LogPath(), 8192, 0))
		}
	})
	count := func(q string) int {
		v, _, err := p.API().Query(ctx, q, time.Now())
		if err != nil {
			return -1
		}
		vec, _ := v.(model.Vector)
		return len(vec)
	}

	unregister, err := RegisterTarget(targets, "cell-1", []FileTarget{{Targets: []string{strings.TrimPrefix(srv.URL, "http://")},
		Labels: map[string]string{"__metrics_path__": "/metrics/shard/0", "instance": "cell-1"}}})
	require.NoError(t, err)
	const q = `aware_test_study{job="study",instance="cell-1"} == 7`
	require.Eventually(t, func() bool { return count(q) == 1 }, time.Minute, 200*time.Millisecond, "the registered target is scraped")
	require.NoError(t, unregister())
	require.Eventually(t, func() bool { return count(`up{job="study"}`) == 0 }, time.Minute, 200*time.Millisecond, "the unregistered target is dropped")
}
