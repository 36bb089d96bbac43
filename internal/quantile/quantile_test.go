package quantile

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/gonum/stat"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    []float64
		want float64
	}{
		{"odd", []float64{3, 1, 2}, 2},
		{"even: mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"one", []float64{7}, 7},
		{"ties", []float64{1, 1, 1, 5}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.x...)
			assert.Equal(t, tc.want, Median(tc.x))
			assert.Equal(t, in, tc.x, "input not modified")
		})
	}
	assert.True(t, math.IsNaN(Median(nil)), "empty: NaN")
}

func TestLinear(t *testing.T) {
	x := []float64{10, 0, 30, 20} // sorted: 0 10 20 30
	for _, tc := range []struct {
		q, want float64
	}{
		{0, 0}, {1, 30}, {0.5, 15}, {1.0 / 3, 10}, {0.9, 27}, {0.25, 7.5},
	} {
		assert.InDelta(t, tc.want, Linear(x, tc.q), 1e-12, "q=%v", tc.q)
	}
	assert.Equal(t, []float64{10, 0, 30, 20}, x, "input not modified")
	assert.Equal(t, 5.0, Linear([]float64{5}, 0.7))
	assert.True(t, math.IsNaN(Linear(nil, 0.5)))
	// Type 7 is not gonum's LinInterp (type 4): they differ here.
	assert.NotEqual(t, stat.Quantile(0.9, stat.LinInterp, []float64{0, 10, 20, 30}, nil), Linear(x, 0.9))
}

func TestNearestRank(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, q := range []float64{0, 0.05, 0.1, 0.15, 0.5, 0.55, 0.9, 0.95, 0.99, 1} {
		assert.Equal(t, stat.Quantile(q, stat.Empirical, s, nil), NearestRank(s, q), "q=%v: gonum's empirical quantile", q)
	}
	assert.Equal(t, 5.0, NearestRank([]float64{9, 5, 1}, 0.5))
	assert.True(t, math.IsNaN(NearestRank(nil, 0.5)))
	assert.Equal(t, -1, NearestRankIndex(0, 0.5))
	assert.Equal(t, 0, NearestRankIndex(3, 0))
	assert.Equal(t, 2, NearestRankIndex(3, 1))
}
