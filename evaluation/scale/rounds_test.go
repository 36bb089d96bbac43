package scale

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/internal/quantile"
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

func TestQuantile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{[]time.Duration{ms(1)}, 0.5, ms(1)},
		{[]time.Duration{ms(1), ms(2), ms(3), ms(4)}, 0.5, ms(2)},
		{[]time.Duration{ms(1), ms(2), ms(3), ms(4)}, 0.95, ms(4)},
	} {
		assert.Equal(t, tc.want, tc.in[quantile.NearestRankIndex(len(tc.in), tc.q)], "%v q=%g", tc.in, tc.q)
	}
}
