package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBenchTable(t *testing.T) {
	ok := sampleReport()
	ok.AchievedRate = 99.5
	bad := sampleReport() // -2.00 % is within 2 %; make it worse
	bad.AchievedRate = 97.9
	rows := []BenchRow{{Rate: 100, Report: ok}, {Rate: 100, Report: bad}, {Rate: 5, Report: Report{}}}
	assert.True(t, rows[0].Pass(0.02))
	assert.False(t, rows[1].Pass(0.02))
	assert.False(t, rows[2].Pass(0.02), "no target rate cannot pass")

	var buf bytes.Buffer
	require.NoError(t, WriteBenchTable(&buf, rows, 0.02))
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	require.Len(t, lines, 4)
	assert.Contains(t, lines[0], "within 2%")
	assert.True(t, strings.HasSuffix(strings.TrimRight(lines[1], " "), "PASS"), lines[1])
	assert.Contains(t, lines[1], "-0.50%")
	assert.True(t, strings.HasSuffix(strings.TrimRight(lines[2], " "), "FAIL"), lines[2])
	assert.Contains(t, lines[2], "1.500", "p50 in ms")
	assert.Equal(t, len(lines[0]), len(lines[1]), "columns are aligned")

	buf.Reset()
	require.NoError(t, WriteBenchJSON(&buf, rows, 0.02))
	var got []map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	require.Len(t, got, 3)
	assert.Equal(t, true, got[0]["pass"])
	assert.Equal(t, false, got[1]["pass"])
	assert.Equal(t, 100.0, got[0]["rate"])
	assert.Equal(t, 99.5, got[0]["report"].(map[string]any)["achievedRate"])
}

func TestBench(t *testing.T) {
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		okHandler(w, r)
	}))
	defer ts.Close()
	var seen []float64
	rows, err := Bench(t.Context(), ts.URL, BenchConfig{
		Rates: []float64{100, 200}, Duration: 500 * time.Millisecond,
		Warmup: 100 * time.Millisecond, Pause: 10 * time.Millisecond,
		AfterRate: func(r BenchRow) error { seen = append(seen, r.Rate); return nil },
	})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, []float64{100, 200}, seen)
	assert.Equal(t, int64(10+50+100), hits.Load(), "warm-up 10, then 50 and 100 requests")
	for _, r := range rows {
		assert.Equal(t, int64(r.Rate/2), r.Report.Completed)
		assert.True(t, r.Pass(0.05), "rate %v: achieved %v", r.Rate, r.Report.AchievedRate)
	}

	rows, err = Bench(t.Context(), ts.URL, BenchConfig{
		Rates: []float64{100, 200, 300}, Duration: 100 * time.Millisecond, Poisson: true, Seed: 3,
		AfterRate: func(BenchRow) error { return errors.New("server died") },
	})
	assert.EqualError(t, err, "server died")
	assert.Len(t, rows, 1, "rows done before the error are returned")

	_, err = Bench(t.Context(), ts.URL, BenchConfig{})
	assert.ErrorContains(t, err, "at least one rate")
	_, err = Bench(t.Context(), ts.URL, BenchConfig{Rates: []float64{-1}, Duration: time.Second})
	assert.ErrorContains(t, err, "bench rate -1")
}
