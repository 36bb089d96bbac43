package telemetry

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

var inf = math.Inf(1)

func TestQuantile(t *testing.T) {
	// 100 observations: 50 in (0.1, 0.25], 40 in (0.25, 0.5], 10 in (0.5, 1].
	std := []Bucket{{0.1, 0}, {0.25, 50}, {0.5, 90}, {1, 100}, {inf, 100}}
	for _, tc := range []struct {
		name    string
		q       float64
		buckets []Bucket
		want    float64
	}{
		{"median at a bucket edge", 0.5, std, 0.25},
		{"p90 at a bucket edge", 0.9, std, 0.5},
		{"p95 interpolated", 0.95, std, 0.75},
		{"p99 interpolated", 0.99, std, 0.95},
		{"p25 interpolated", 0.25, std, 0.175},
		{"q=1 is the top of the last non-empty bucket", 1, std, 1},
		{"q=0 is the bottom of the first non-empty bucket", 0, std, 0.1},
		{"first bucket interpolates from 0", 0.5, []Bucket{{1, 100}, {inf, 100}}, 0.5},
		{"rank in +Inf bucket gives the highest finite bound", 0.5, []Bucket{{0.1, 10}, {inf, 100}}, 0.1},
		{"first bucket with a bound ≤ 0 gives that bound", 0.25, []Bucket{{-1, 10}, {1, 20}, {inf, 20}}, -1},
		{"unsorted input", 0.95, []Bucket{{inf, 100}, {0.5, 90}, {0.1, 0}, {1, 100}, {0.25, 50}}, 0.75},
		{"equal bounds are merged", 0.5, []Bucket{{0.5, 30}, {0.5, 20}, {1, 100}, {inf, 100}}, 0.5},
		{"non-monotonic counts are levelled", 0.75, []Bucket{{0.1, 10}, {0.2, 8}, {0.4, 20}, {inf, 20}}, 0.3},
		{"float noise is ignored", 0.5, []Bucket{{1, 50}, {2, 50 * (1 + 1e-15)}, {inf, 100}}, 1},
		{"no +Inf bucket", 0.5, []Bucket{{0.1, 1}, {1, 2}}, math.NaN()},
		{"only +Inf", 0.5, []Bucket{{inf, 5}}, math.NaN()},
		{"no observations", 0.5, []Bucket{{0.1, 0}, {inf, 0}}, math.NaN()},
		{"no buckets", 0.5, nil, math.NaN()},
		{"NaN q", math.NaN(), std, math.NaN()},
		{"negative q", -0.1, std, math.Inf(-1)},
		{"q above 1", 1.1, std, math.Inf(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Quantile(tc.q, append([]Bucket(nil), tc.buckets...))
			if math.IsNaN(tc.want) {
				assert.True(t, math.IsNaN(got), "got %g", got)
				return
			}
			assert.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

// TestQuantileAcrossPods checks why buckets are summed before the quantile
// is taken: pod A serves 60 req/s in (10, 25] ms, pod B 40 req/s in
// (50, 100] ms. The application's p99 lies in B's bucket; the mean of the
// pods' p99s does not.
func TestQuantileAcrossPods(t *testing.T) {
	bounds := []float64{0.01, 0.025, 0.05, 0.1, inf}
	a := cumulative(bounds, []float64{0, 60, 0, 0, 0})
	b := cumulative(bounds, []float64{0, 0, 0, 40, 0})
	sum := addHistogram(addHistogram(nil, a), b)
	assert.InDelta(t, 0.0225, Quantile(0.5, clone(sum)), 1e-12)   // 0.01 + 0.015×50/60
	assert.InDelta(t, 0.09375, Quantile(0.95, clone(sum)), 1e-12) // 0.05 + 0.05×35/40
	assert.InDelta(t, 0.09875, Quantile(0.99, clone(sum)), 1e-12) // 0.05 + 0.05×39/40
	meanOfP99 := (Quantile(0.99, clone(a)) + Quantile(0.99, clone(b))) / 2
	assert.Greater(t, math.Abs(meanOfP99-0.09875), 0.03, "averaging per-pod quantiles is wrong")
}

func TestAddHistogramDifferentLayouts(t *testing.T) {
	a := []Bucket{{0.1, 1}, {0.5, 3}, {1, 4}, {inf, 4}}
	b := []Bucket{{0.1, 2}, {0.25, 2}, {1, 6}, {inf, 7}}
	got := addHistogram(addHistogram(nil, a), b)
	assert.Equal(t, []Bucket{{0.1, 3}, {1, 10}, {inf, 11}}, got, "only the shared bounds remain")
	assert.Equal(t, []Bucket{{0.1, 1}, {0.5, 3}, {1, 4}, {inf, 4}}, a, "inputs are not modified")
}

func cumulative(bounds, perBucket []float64) []Bucket {
	out := make([]Bucket, len(bounds))
	var c float64
	for i := range bounds {
		c += perBucket[i]
		out[i] = Bucket{bounds[i], c}
	}
	return out
}

func clone(b []Bucket) []Bucket { return append([]Bucket(nil), b...) }
