package trace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitHighLow(t *testing.T) {
	tests := []struct {
		name                string
		in                  []float64
		window              time.Duration
		high, low           []float64
		highStart, lowStart time.Duration
	}{
		{"clear peak and trough", []float64{5, 5, 9, 9, 1, 1, 5, 5}, 2 * time.Second, []float64{9, 9}, []float64{1, 1}, 2 * time.Second, 4 * time.Second},
		{"low must not overlap high", []float64{1, 9, 9, 3, 3, 3}, 2 * time.Second, []float64{9, 9}, []float64{3, 3}, time.Second, 3 * time.Second},
		{"ties go to the earliest", []float64{2, 2, 2, 2, 2, 2}, 2 * time.Second, []float64{2, 2}, []float64{2, 2}, 0, 2 * time.Second},
		{"rolling mean over the window", []float64{0, 10, 0, 6, 6, 0, 0, 1}, 2 * time.Second, []float64{6, 6}, []float64{0, 0}, 3 * time.Second, 5 * time.Second},
		{"scaled values tie despite rounding", []float64{0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3}, 3 * time.Second, []float64{0.1, 0.2, 0.3}, []float64{0.1, 0.2, 0.3}, 0, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp, err := SplitHighLow(secs(tt.in...), tt.window)
			require.NoError(t, err)
			assert.Equal(t, tt.high, sp.High.Values)
			assert.Equal(t, tt.low, sp.Low.Values)
			assert.Equal(t, tt.highStart, sp.HighStart)
			assert.Equal(t, tt.lowStart, sp.LowStart)
			assert.Equal(t, tt.window, sp.High.Span())
			assert.Equal(t, tt.window, sp.Low.Span())
			assert.GreaterOrEqual(t, mean(sp.High.Values), mean(sp.Low.Values))
			noOverlap := sp.LowStart+tt.window <= sp.HighStart || sp.HighStart+tt.window <= sp.LowStart
			assert.True(t, noOverlap, "windows overlap")

			hl, err := HighToLow(secs(tt.in...), tt.window)
			require.NoError(t, err)
			assert.Equal(t, append(append([]float64{}, tt.high...), tt.low...), hl.Values)
			lh, err := LowToHigh(secs(tt.in...), tt.window)
			require.NoError(t, err)
			assert.Equal(t, append(append([]float64{}, tt.low...), tt.high...), lh.Values)
			assert.Equal(t, 2*tt.window, lh.Span())
		})
	}
	t.Run("errors", func(t *testing.T) {
		_, err := SplitHighLow(secs(1, 2, 3), 2*time.Second)
		assert.ErrorContains(t, err, "spans 3s, shorter than two windows of 2s")
		_, err = SplitHighLow(secs(1, 2, 3, 4), 1500*time.Millisecond)
		assert.ErrorContains(t, err, "window 1.5s is not a positive multiple of the step 1s")
		_, err = HighToLow(secs(1, 2), 0)
		assert.ErrorContains(t, err, "window 0s")
		_, err = LowToHigh(secs(1, -2), time.Second)
		assert.ErrorContains(t, err, "is -2")
	})
}
