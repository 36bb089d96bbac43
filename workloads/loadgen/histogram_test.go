package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHistogramBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(v uint64) {
		i := histIndex(v)
		require.Less(t, i, histBuckets, "v=%d", v)
		low, width := histBucket(i)
		require.True(t, low <= v && v-low < width, "v=%d in bucket %d [%d, +%d)", v, i, low, width)
		if low >= 1<<histExactBits {
			require.LessOrEqual(t, float64(width)/float64(low), 1.0/histSub, "relative width of bucket %d", i)
		}
	}
	for v := range uint64(4096) {
		check(v)
	}
	for range 100000 {
		check(r.Uint64() >> (1 + r.IntN(63))) // durations are non-negative int64
	}
	check(math.MaxInt64)
	// Buckets tile the line: each starts where the previous ends.
	for i := 1; i < histBuckets; i++ {
		pl, pw := histBucket(i - 1)
		l, _ := histBucket(i)
		require.Equal(t, pl+pw, l, "bucket %d", i)
	}
}

// exactQuantile is the nearest-rank quantile of sorted samples.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func TestHistogramQuantilesAgainstKnownDistributions(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 43))
	dists := []struct {
		name string
		draw func() time.Duration
	}{
		{"lognormal around 2ms", func() time.Duration {
			return time.Duration(2e6 * math.Exp(0.8*r.NormFloat64()))
		}},
		{"exponential mean 50ms", func() time.Duration { return time.Duration(50e6 * r.ExpFloat64()) }},
		{"uniform 1us-10s", func() time.Duration { return time.Microsecond + time.Duration(r.Int64N(int64(10*time.Second))) }},
		{"bimodal", func() time.Duration {
			if r.IntN(10) == 0 {
				return time.Duration(200e6 + r.Int64N(50e6))
			}
			return time.Duration(1e6 + r.Int64N(1e5))
		}},
	}
	for _, d := range dists {
		t.Run(d.name, func(t *testing.T) {
			var h Histogram
			samples := make([]time.Duration, 200000)
			var sum float64
			for i := range samples {
				samples[i] = d.draw()
				h.Record(samples[i])
				sum += float64(samples[i])
			}
			slices.Sort(samples)
			for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999} {
				want := exactQuantile(samples, q)
				got := h.Quantile(q)
				assert.InEpsilon(t, float64(want), float64(got), 0.004, "q=%v: want %s got %s", q, want, got)
			}
			assert.Equal(t, samples[0], h.Min())
			assert.Equal(t, samples[len(samples)-1], h.Max())
			assert.Equal(t, samples[len(samples)-1], h.Quantile(1))
			assert.InDelta(t, sum/float64(len(samples)), float64(h.Mean()), 1)
			assert.Equal(t, uint64(len(samples)), h.Count())
		})
	}
}

func TestHistogramSmallValuesExact(t *testing.T) {
	var h Histogram
	for v := range 100 {
		h.Record(time.Duration(v + 1))
	}
	assert.Equal(t, time.Duration(50), h.Quantile(0.5))
	assert.Equal(t, time.Duration(99), h.Quantile(0.99))
	assert.Equal(t, time.Duration(1), h.Quantile(0))
}

func TestHistogramEmptyNegativeAndMerge(t *testing.T) {
	var empty Histogram
	assert.Zero(t, empty.Quantile(0.5))
	assert.Zero(t, empty.Mean())
	assert.Equal(t, Quantiles{}, empty.Quantiles())

	var a, b, all Histogram
	a.Record(-time.Second) // counts as zero
	assert.Equal(t, time.Duration(0), a.Max())
	all.Record(0)
	for i := range 1000 {
		d := time.Duration(i) * time.Millisecond
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
		all.Record(d)
	}
	a.Merge(&b)
	a.Merge(&empty)
	assert.Equal(t, all.Count(), a.Count())
	assert.Equal(t, all.Quantiles(), a.Quantiles())
	assert.Equal(t, all.Min(), a.Min())
}

func BenchmarkHistogram(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	vals := make([]time.Duration, 4096)
	for i := range vals {
		vals[i] = time.Duration(1e6 * math.Exp(r.NormFloat64()))
	}
	b.Run("Record", func(b *testing.B) {
		var h Histogram
		for i := 0; b.Loop(); i++ {
			h.Record(vals[i&4095])
		}
	})
	b.Run("Quantile", func(b *testing.B) {
		var h Histogram
		for _, v := range vals {
			h.Record(v)
		}
		for b.Loop() {
			_ = h.Quantile(0.99)
		}
	})
}
