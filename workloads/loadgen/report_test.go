package loadgen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleReport() Report {
	return Report{
		Target: "http://127.0.0.1:8080/invoke", Speed: 1,
		Scheduled: 1000, Sent: 990, Dropped: 10, Completed: 980, Failed: 10,
		Errors:   map[string]int64{"http_500": 7, ErrTimeout: 3},
		Duration: 10 * time.Second, TargetRate: 100, AchievedRate: 98,
		Latency:  Quantiles{P50: 1500 * time.Microsecond, P95: 3 * time.Millisecond, P99: 5 * time.Millisecond, Max: 20 * time.Millisecond, Mean: 2 * time.Millisecond},
		Lateness: Quantiles{P50: 50 * time.Microsecond, P99: 400 * time.Microsecond, Max: time.Millisecond},
	}
}

func TestReportRateError(t *testing.T) {
	assert.InDelta(t, -0.02, sampleReport().RateError(), 1e-12)
	assert.Zero(t, Report{}.RateError())
}

func TestReportWriteTable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, sampleReport().WriteTable(&buf))
	out := buf.String()
	for _, want := range []string{
		"target                http://127.0.0.1:8080/invoke\n",
		"completed             980\n",
		"  http_500            7\n",
		"  timeout             3\n",
		"dropped               10\n",
		"achieved rate         98.0 req/s (-2.00%)\n",
		"latency p50/p95/p99   1.500 ms / 3.000 ms / 5.000 ms\n",
		"lateness p50/p99/max  0.050 ms / 0.400 ms / 1.000 ms\n",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "interrupted")
	assert.Less(t, strings.Index(out, "http_500"), strings.Index(out, "timeout"), "error kinds sorted")
}

func TestReportJSON(t *testing.T) {
	b, err := json.Marshal(sampleReport())
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, 980.0, got["completed"])
	assert.Equal(t, 10.0, got["durationSeconds"])
	assert.InDelta(t, -0.02, got["rateError"], 1e-12)
	assert.Equal(t, map[string]any{"http_500": 7.0, "timeout": 3.0}, got["errors"])
	lat := got["latencySeconds"].(map[string]any)
	assert.InDelta(t, 0.0015, lat["p50"], 1e-12)
	assert.InDelta(t, 0.005, lat["p99"], 1e-12)

	b, err = json.Marshal(Report{})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"errors":{}`)
}

func TestPct(t *testing.T) {
	assert.Equal(t, "+0.00%", pct(-0.0000001))
	assert.Equal(t, "+0.00%", pct(0))
	assert.Equal(t, "-1.25%", pct(-0.0125))
	assert.Equal(t, "+2.00%", pct(0.02))
}
