package trace

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteStatsTable(t *testing.T) {
	a := Describe(Series{Name: "short", Step: time.Second, Values: []float64{1, 3, 1, 3}})
	v := make([]float64, 7200)
	for i := range v {
		v[i] = float64(i % 3)
	}
	b := Describe(Series{Name: "two-hours", Step: time.Second, Values: v})
	var out strings.Builder
	require.NoError(t, WriteStatsTable(&out, a, b))
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Len(t, lines, 1+len(statRows))
	assert.Regexp(t, `^\s*statistic\s+short\s+two-hours$`, lines[0])
	assert.Regexp(t, `^\s*mean rate \(/s\)\s+2\.0000\s+1\.0000$`, lines[4])
	assert.Regexp(t, `^\s*CV 1m\s+n/a\s+0\.000$`, lines[7], "a 4 s series has no minute statistics")
	width := len(lines[0])
	for _, l := range lines {
		assert.Len(t, l, width, "aligned: %q", l)
	}
}
