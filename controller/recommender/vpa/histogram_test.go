package vpa

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hand formulas of exponentialHistogramOptions: bucket b >= 1 starts at
// first*(1.05^b-1)/0.05 and value v falls in floor(log_1.05(v*0.05/first+1)).
func handBucket(v, first float64) int {
	return int(math.Floor(math.Log(v*0.05/first+1) / math.Log(1.05)))
}

func handEnd(v, first float64) float64 {
	return first * (math.Pow(1.05, float64(handBucket(v, first)+1)) - 1) / 0.05
}

func cpuHist() *histogram {
	return newHistogram(maxCPU, DefaultCPUFirstBucket, 1+bucketGrowth, epsilon, DefaultHalfLife)
}

// Mirrors NewExponentialHistogramOptions: numBuckets = ceil(log_r(max*(r-1)/first+1)) + 1.
func TestHistogramBuckets(t *testing.T) {
	tests := []struct {
		name             string
		h                *histogram
		buckets          int
		value            float64
		bucket           int
		start, nextStart float64
	}{
		// log_1.05(1000*0.05/0.01+1) = log_1.05(5001) = 174.6 -> 175 + 1
		{"cpu", cpuHist(), 176, 1.0, 36, 0.2 * (math.Pow(1.05, 36) - 1), 0.2 * (math.Pow(1.05, 37) - 1)},
		// log_1.05(1e12*0.05/1e7+1) = log_1.05(5001) = 174.6 -> 176 as well
		{"memory", newHistogram(maxMemory, firstMemBucket, 1.05, epsilon, DefaultHalfLife), 176, 300 << 20, handBucket(300<<20, 1e7), 0, 0},
		// first CPU bucket 1m: log_1.05(50001) = 221.8 -> 223
		{"cpu 1m", newHistogram(maxCPU, 0.001, 1.05, epsilon, DefaultHalfLife), 223, 0.0005, 0, 0, 0.001},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Len(t, tc.h.start, tc.buckets)
			assert.Equal(t, tc.bucket, tc.h.findBucket(tc.value))
			if tc.nextStart != 0 {
				assert.InDelta(t, tc.start, tc.h.start[tc.bucket], 1e-12)
				assert.InDelta(t, tc.nextStart, tc.h.start[tc.bucket+1], 1e-12)
			}
			assert.Equal(t, 0, tc.h.findBucket(-1))
			assert.Equal(t, tc.buckets-1, tc.h.findBucket(1e30), "values past the range go to the last bucket")
		})
	}
}

// Mirrors histogram.Percentile: the end of the first bucket whose cumulative
// weight reaches p*total; the start of the last bucket for the last bucket.
func TestHistogramPercentiles(t *testing.T) {
	type add struct{ v, w float64 }
	tests := []struct {
		name    string
		samples []add
		ps      [3]float64
		want    [3]float64
	}{
		{"empty", nil, [3]float64{0.5, 0.9, 0.95}, [3]float64{}},
		{"single", []add{{1, 1}}, [3]float64{0, 0.5, 1}, [3]float64{handEnd(1, 0.01), handEnd(1, 0.01), handEnd(1, 0.01)}},
		// weights 1, 1, 2 (total 4): p50 -> cum 2 at 2.0; p90 -> 3.6 needs 3.0; p25 -> 1 at 1.0.
		{"weighted", []add{{1, 1}, {2, 1}, {3, 2}}, [3]float64{0.25, 0.5, 0.9}, [3]float64{handEnd(1, 0.01), handEnd(2, 0.01), handEnd(3, 0.01)}},
		// weights 9 at 0.1 and 1 at 5: p90 -> cum 9 reaches 9 at 0.1; p95 -> 9.5 needs 5.
		{"skewed", []add{{0.1, 9}, {5, 1}}, [3]float64{0.5, 0.9, 0.95}, [3]float64{handEnd(0.1, 0.01), handEnd(0.1, 0.01), handEnd(5, 0.01)}},
		{"below first bucket", []add{{0.001, 1}}, [3]float64{0.5, 0.9, 0.95}, [3]float64{0.01, 0.01, 0.01}},
		{"last bucket has no end", []add{{5000, 1}}, [3]float64{0.5, 0.9, 0.95}, [3]float64{cpuHist().start[175], cpuHist().start[175], cpuHist().start[175]}},
		{"below epsilon is empty", []add{{1, epsilon / 2}}, [3]float64{0.5, 0.9, 0.95}, [3]float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := cpuHist()
			for _, s := range tc.samples {
				h.add(s.v, s.w, 0)
			}
			near(t, tc.want, h.percentiles(tc.ps))
		})
	}
}

// Mirrors decayingHistogram.AddSample: a sample one half-life newer weighs
// twice as much, which moves the percentiles towards it.
func TestHistogramDecay(t *testing.T) {
	ps := [3]float64{0.3, 0.4, 0.9}
	same := cpuHist()
	same.add(1, 1, 0)
	same.add(2, 1, 0)
	// equal weights: p30 -> 0.6 and p40 -> 0.8 are both reached at value 1.
	near(t, [3]float64{handEnd(1, 0.01), handEnd(1, 0.01), handEnd(2, 0.01)}, same.percentiles(ps))

	decayed := cpuHist()
	decayed.add(1, 1, 0)
	decayed.add(2, 1, DefaultHalfLife) // weight 2 of a total 3
	assert.InDelta(t, 3.0, decayed.total, 1e-12)
	// p30 -> 0.9 <= 1 at value 1; p40 -> 1.2 > 1 needs value 2.
	near(t, [3]float64{handEnd(1, 0.01), handEnd(2, 0.01), handEnd(2, 0.01)}, decayed.percentiles(ps))

	older := cpuHist()
	older.add(1, 1, DefaultHalfLife) // the newer sample at 1 now dominates: 2 of 3
	older.add(2, 1, 0)
	ps = [3]float64{0.5, 0.66, 0.7}
	near(t, [3]float64{handEnd(1, 0.01), handEnd(1, 0.01), handEnd(2, 0.01)}, older.percentiles(ps))
}

// Mirrors shiftReferenceTimestamp: past 2^100 the reference moves forward
// and every weight is rescaled; percentiles do not change.
func TestHistogramShiftReference(t *testing.T) {
	h := cpuHist()
	h.add(1, 1, 0)
	h.add(2, 1, 0)
	late := 101 * DefaultHalfLife
	h.add(3, 1, late)
	assert.Equal(t, late, h.ref, "reference moved to the new sample")
	assert.InDelta(t, 1.0, h.weight[h.findBucket(3)], 1e-12)
	assert.InDelta(t, 2*math.Ldexp(1, -101), h.weight[h.findBucket(1)]+h.weight[h.findBucket(2)], 1e-40)
	assert.False(t, math.IsInf(h.total, 0))
	// The old samples are now lighter than epsilon: dropped from min/max.
	assert.Equal(t, h.findBucket(3), h.minB)
	assert.InDelta(t, handEnd(3, 0.01), h.percentiles([3]float64{0.1, 0.5, 0.9})[0], 1e-12)

	r := cpuHist()
	r.ref = 0
	r.shiftReference(36 * time.Hour) // rounds to 48 h (multiple of the half-life)
	assert.Equal(t, 48*time.Hour, r.ref)
}

// Mirrors histogram.SubtractSample: weights never go negative and min/max
// buckets follow.
func TestHistogramSubtract(t *testing.T) {
	h := cpuHist()
	h.add(1, 1, 0)
	h.add(2, 1, 0)
	h.subtract(2, 0.5, 0)
	require.InDelta(t, 1.5, h.total, 1e-12)
	h.subtract(2, 5, 0) // more than is there: clamps
	assert.InDelta(t, 1.0, h.total, 1e-12)
	assert.Equal(t, h.findBucket(1), h.maxB)
	h.subtract(1, 1-epsilon/2, 0) // leaves less than epsilon: removes all
	assert.True(t, h.isEmpty())
	assert.InDelta(t, 0.0, h.total, 1e-12)
}

func near(t *testing.T, want, got [3]float64) {
	t.Helper()
	for i := range got {
		assert.InDelta(t, want[i], got[i], 1e-12*max(1, want[i]), "percentile #%d", i)
	}
}
