package trace

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArrivals(t *testing.T) {
	tests := []struct {
		name    string
		in      Series
		perStep []int
	}{
		{"whole counts", Series{Step: time.Second, Values: []float64{3, 0, 5, 1}}, []int{3, 0, 5, 1}},
		{"fractions carry over", Series{Step: time.Second, Values: []float64{0.4, 0.4, 0.4, 0.4, 0.4}}, []int{0, 1, 0, 1, 0}},
		{"half rounds up", Series{Step: time.Minute, Values: []float64{0.5, 2.5}}, []int{1, 2}},
		{"empty", Series{Step: time.Second}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Arrivals(tt.in, 42)
			require.NoError(t, err)
			assert.True(t, slices.IsSorted(got), "sorted")
			counts := make([]int, tt.in.Len())
			for _, at := range got {
				require.GreaterOrEqual(t, at, time.Duration(0))
				require.Less(t, at, tt.in.Span())
				counts[at/tt.in.Step]++
			}
			if tt.perStep != nil {
				assert.Equal(t, tt.perStep, counts)
			}
			again, err := Arrivals(tt.in, 42)
			require.NoError(t, err)
			assert.Equal(t, got, again, "deterministic")
		})
	}
	t.Run("seed changes the times, not the counts", func(t *testing.T) {
		s := Series{Step: time.Second, Values: []float64{50, 20}}
		a, err := Arrivals(s, 1)
		require.NoError(t, err)
		b, err := Arrivals(s, 2)
		require.NoError(t, err)
		assert.Len(t, b, len(a))
		assert.NotEqual(t, a, b)
	})
	t.Run("uniform within the step", func(t *testing.T) {
		got, err := Arrivals(Series{Step: time.Second, Values: []float64{10000}}, 3)
		require.NoError(t, err)
		var firstHalf int
		for _, at := range got {
			if at < 500*time.Millisecond {
				firstHalf++
			}
		}
		assert.InDelta(t, 5000, firstHalf, 250)
	})
	t.Run("invalid", func(t *testing.T) {
		_, err := Arrivals(Series{Name: "x", Step: time.Second, Values: []float64{-1}}, 1)
		assert.ErrorContains(t, err, `series "x": value 0 (at 0s) is -1`)
		_, err = Arrivals(Series{Step: time.Second, Values: []float64{2e8}}, 1)
		assert.ErrorContains(t, err, "more than the limit")
	})
}

func BenchmarkArrivals(b *testing.B) {
	s := Series{Step: time.Second, Values: slices.Repeat([]float64{100}, 3600)}
	b.Run("360k", func(b *testing.B) {
		for b.Loop() {
			if _, err := Arrivals(s, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
