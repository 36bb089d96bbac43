package scale

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundOf(t *testing.T) {
	T := time.Date(2025, 1, 1, 12, 0, 15, 0, time.UTC)
	exposition := func(start time.Time, seconds float64, steps, written int) counters {
		t.Helper()
		text := "# TYPE aware_controller_last_round gauge\n" +
			"aware_controller_last_round{field=\"start\"} " + fmtFloat(float64(start.UnixNano())/1e9) + "\n" +
			"aware_controller_last_round{field=\"seconds\"} " + fmtFloat(seconds) + "\n" +
			"aware_controller_last_round{field=\"steps\"} " + fmtFloat(float64(steps)) + "\n" +
			"aware_controller_last_round{field=\"written\"} " + fmtFloat(float64(written)) + "\n"
		c, err := parseCounters(strings.NewReader(text))
		require.NoError(t, err)
		return c
	}

	rd, ok := roundOf(T, 1000, exposition(T, 3.25, 1000, 400))
	require.True(t, ok)
	assert.Equal(t, Round{Start: T, Steps: 1000, Want: 1000, Complete: true, Reported: true, Duration: 3250 * time.Millisecond, Written: 400, Unchanged: 600}, rd)

	rd, ok = roundOf(T, 1000, exposition(T, 16, 990, 0))
	require.True(t, ok)
	assert.False(t, rd.Complete, "990 of 1000 MPAs stepped")

	_, ok = roundOf(T, 1000, exposition(T.Add(-15*time.Second), 2, 1000, 5))
	assert.False(t, ok, "the controller still reports the round before")
	_, ok = roundOf(T, 1000, counters{})
	assert.False(t, ok, "a controller that reported no round yet")
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// roundQuantiles: nearest-rank p50 and p95 and the longest of the complete,
// reported rounds only.
func TestRoundQuantiles(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	round := func(d time.Duration, reported, complete bool) Round {
		return Round{Duration: d, Reported: reported, Complete: complete}
	}
	for _, tc := range []struct {
		name              string
		in                []Round
		p50, p95, longest time.Duration
		n                 int
	}{
		{"none", nil, 0, 0, 0, 0},
		{"one", []Round{round(ms(7), true, true)}, ms(7), ms(7), ms(7), 1},
		{"four, unsorted", []Round{round(ms(4), true, true), round(ms(1), true, true), round(ms(3), true, true), round(ms(2), true, true)}, ms(2), ms(4), ms(4), 4},
		{"incomplete and unreported left out", []Round{round(ms(1), true, true), round(ms(90), true, false), round(ms(80), false, true), round(ms(2), true, true)}, ms(1), ms(2), ms(2), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p50, p95, longest, n := roundQuantiles(tc.in)
			assert.Equal(t, []any{tc.p50, tc.p95, tc.longest, tc.n}, []any{p50, p95, longest, n})
		})
	}
}
