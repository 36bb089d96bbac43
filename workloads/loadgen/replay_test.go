package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildSchedule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trace string
		rate  float64
		want  int // arrivals, -1 for "about rate × length"
	}{
		{"constant", TraceConstant, 20, 200},
		{"poisson", TracePoisson, 20, -1},
		{"synthetic", TraceSynthetic, 20, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := BuildSchedule(tc.trace, tc.rate, 0, 10*time.Second, 3)
			require.NoError(t, err)
			require.NoError(t, s.Validate())
			if tc.want >= 0 {
				assert.Len(t, s.Arrivals, tc.want)
			} else {
				assert.InDelta(t, 200, len(s.Arrivals), 60)
			}
			again, err := BuildSchedule(tc.trace, tc.rate, 0, 10*time.Second, 3)
			require.NoError(t, err)
			assert.Equal(t, s.Arrivals, again.Arrivals, "same seed, same schedule")
		})
	}
	_, err := BuildSchedule("/nonexistent/trace.txt", 10, 0, time.Second, 1)
	assert.ErrorContains(t, err, "/nonexistent/trace.txt")
	_, err = BuildSchedule(TraceSynthetic, 10, 0, 0, 1)
	assert.ErrorContains(t, err, "--duration")
}

func TestReplay(t *testing.T) {
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer ts.Close()
	cfg := ReplayConfig{Target: ts.URL, Trace: TraceConstant, Rate: 50, Duration: 200 * time.Millisecond, Speed: 1, Seed: 1,
		JSON: true, MaxOutstanding: DefaultMaxOutstanding, Timeout: DefaultTimeout, MetricsAddr: "127.0.0.1:0"}
	var out bytes.Buffer
	require.NoError(t, Replay(context.Background(), cfg, &out))
	var rep struct {
		Target    string `json:"target"`
		Scheduled int64  `json:"scheduled"`
		Completed int64  `json:"completed"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	assert.Equal(t, ts.URL, rep.Target)
	assert.EqualValues(t, 10, rep.Scheduled)
	assert.EqualValues(t, 10, rep.Completed)
	assert.EqualValues(t, 10, hits.Load())

	cfg.JSON, cfg.MetricsAddr = false, ""
	out.Reset()
	require.NoError(t, Replay(context.Background(), cfg, &out))
	assert.Contains(t, out.String(), ts.URL)

	cfg.MetricsAddr = "127.0.0.1:-1"
	assert.ErrorContains(t, Replay(context.Background(), cfg, &out), "--metrics-addr")
	cfg.MetricsAddr, cfg.Trace, cfg.Duration = "", TraceSynthetic, 0
	assert.ErrorContains(t, Replay(context.Background(), cfg, &out), "--duration 0s")
}

func TestServeMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	require.NotNil(t, m)
	stop, err := ServeMetrics("127.0.0.1:0", reg)
	require.NoError(t, err)
	stop()
	_, err = ServeMetrics("nowhere", reg)
	assert.ErrorContains(t, err, "--metrics-addr")
}

func TestLocalBenchConfigValidate(t *testing.T) {
	good := LocalBenchConfig{Rates: []int{250, 500}, Arrivals: TraceConstant}
	require.NoError(t, good.Validate())
	for _, tc := range []struct {
		name string
		edit func(*LocalBenchConfig)
		want string
	}{
		{"arrivals", func(c *LocalBenchConfig) { c.Arrivals = "x" }, `--arrivals "x": want constant or poisson`},
		{"zero rate", func(c *LocalBenchConfig) { c.Rates = []int{250, 0} }, "--rates: 0 must be positive"},
		{"negative rate", func(c *LocalBenchConfig) { c.Rates = []int{-1} }, "--rates: -1 must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			assert.ErrorContains(t, c.Validate(), tc.want)
			assert.ErrorContains(t, BenchLocal(context.Background(), c, &bytes.Buffer{}), tc.want, "BenchLocal validates first")
		})
	}
}

func TestBenchApp(t *testing.T) {
	spec, err := benchApp()
	require.NoError(t, err)
	assert.Equal(t, "loadgen-bench", spec.Name)
	require.Len(t, spec.Segments, 1)
	assert.Equal(t, "json2yaml", spec.Segments[0].Name)
	assert.Equal(t, 250, spec.Segments[0].Size)
}
