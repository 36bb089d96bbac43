package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in log-linear buckets (HDR style): values below
// 256 ns are exact and every power-of-two range above is split into 128 equal
// buckets, so a reported quantile (the bucket's midpoint) is within 0.4 % of
// the exact value, in constant memory (about 58 KiB) for any number of
// samples. The zero value is ready to use; it is not safe for concurrent use.
type Histogram struct {
	counts   []uint64
	n        uint64
	sum      float64
	min, max time.Duration
}

const (
	histExactBits = 8                                             // values below 1<<8 have their own bucket
	histSub       = 1 << (histExactBits - 1)                      // buckets per power of two above
	histBuckets   = 1<<histExactBits + (63-histExactBits)*histSub // covers up to MaxInt64
)

func histIndex(v uint64) int {
	if v < 1<<histExactBits {
		return int(v)
	}
	shift := bits.Len64(v) - histExactBits
	return 1<<histExactBits + (shift-1)*histSub + int(v>>shift) - histSub
}

// histBucket returns the lowest value of bucket i and the bucket's width.
func histBucket(i int) (low, width uint64) {
	if i < 1<<histExactBits {
		return uint64(i), 1
	}
	k := i - 1<<histExactBits
	shift := k/histSub + 1
	return uint64(k%histSub+histSub) << shift, 1 << shift
}

// Record adds one sample; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	h.counts[histIndex(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += float64(d)
}

// Merge adds every sample of o.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Min is the smallest sample (exact), 0 if empty.
func (h *Histogram) Min() time.Duration { return h.min }

// Max is the largest sample (exact), 0 if empty.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the mean sample (exact up to float rounding), 0 if empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(math.Round(h.sum / float64(h.n)))
}

// Quantile returns the nearest-rank q-quantile (0 ≤ q ≤ 1): the sample at
// rank ceil(q·n), approximated by its bucket's midpoint and clamped to the
// exact minimum and maximum. It returns 0 if the histogram is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 || math.IsNaN(q) {
		return 0
	}
	if q <= 0 {
		return h.min
	}
	if q >= 1 {
		return h.max
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			low, width := histBucket(i)
			v := time.Duration(low + (width-1)/2)
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}

// Quantiles summarises a histogram.
func (h *Histogram) Quantiles() Quantiles {
	return Quantiles{
		P50: h.Quantile(0.50), P95: h.Quantile(0.95), P99: h.Quantile(0.99),
		Max: h.Max(), Mean: h.Mean(),
	}
}
