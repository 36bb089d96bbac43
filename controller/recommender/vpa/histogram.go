package vpa

import (
	"math"
	"time"
)

// maxDecayExponent bounds the decay factor at 2^100 before the reference
// time is moved forward (upstream util/decaying_histogram.go).
const maxDecayExponent = 100

// histogram is upstream util.decayingHistogram over exponentialHistogramOptions:
// bucket n >= 1 starts at first*(ratio^n-1)/(ratio-1); a sample's weight is
// multiplied by 2^((t-ref)/halfLife); a bucket lighter than eps is empty;
// percentiles return the end of the bucket holding them.
type histogram struct {
	first, ratio, eps float64
	start             []float64 // bucket start values
	weight            []float64
	total             float64
	minB, maxB        int // first and last non-empty bucket (numBuckets-1 and 0 when empty)
	halfLife          time.Duration
	ref               time.Duration // reference time, a multiple of halfLife
}

// logBase is upstream util.log: base^logBase(base, x) == x.
func logBase(base, x float64) float64 { return math.Log(x) / math.Log(base) }

// newHistogram mirrors NewExponentialHistogramOptions and NewDecayingHistogram.
func newHistogram(maxValue, first, ratio, eps float64, halfLife time.Duration) *histogram {
	n := int(math.Ceil(logBase(ratio, maxValue*(ratio-1)/first+1))) + 1
	h := &histogram{first: first, ratio: ratio, eps: eps, start: make([]float64, n), weight: make([]float64, n), halfLife: halfLife}
	for b := 1; b < n; b++ {
		h.start[b] = first * (math.Pow(ratio, float64(b)) - 1) / (ratio - 1)
	}
	h.minB, h.maxB = n-1, 0
	return h
}

// findBucket mirrors exponentialHistogramOptions.FindBucket.
func (h *histogram) findBucket(v float64) int {
	if v < h.first {
		return 0
	}
	b := int(logBase(h.ratio, v*(h.ratio-1)/h.first+1))
	return min(b, len(h.start)-1)
}

func (h *histogram) isEmpty() bool { return h.weight[h.minB] < h.eps }

// add mirrors decayingHistogram.AddSample.
func (h *histogram) add(v, w float64, t time.Duration) {
	w *= h.decayFactor(t)
	b := h.findBucket(v)
	h.weight[b] += w
	h.total += w
	if b < h.minB && h.weight[b] >= h.eps {
		h.minB = b
	}
	if b > h.maxB && h.weight[b] >= h.eps {
		h.maxB = b
	}
}

// subtract mirrors decayingHistogram.SubtractSample.
func (h *histogram) subtract(v, w float64, t time.Duration) {
	w *= h.decayFactor(t)
	b := h.findBucket(v)
	if w > h.weight[b]-h.eps {
		w = h.weight[b]
	}
	h.total -= w
	h.weight[b] -= w
	h.updateMinMax()
}

func (h *histogram) updateMinMax() {
	last := len(h.weight) - 1
	for h.weight[h.minB] < h.eps && h.minB < last {
		h.minB++
	}
	for h.weight[h.maxB] < h.eps && h.maxB > 0 {
		h.maxB--
	}
}

// percentiles computes histogram.Percentile for every p (ascending) in one
// pass; 0 for an empty histogram.
func (h *histogram) percentiles(ps [3]float64) (out [3]float64) {
	if h.isEmpty() {
		return out
	}
	b, sum := h.minB, 0.0
	for i, p := range ps {
		threshold := p * h.total
		for b < h.maxB && sum+h.weight[b] < threshold {
			sum += h.weight[b]
			b++
		}
		if b < len(h.start)-1 {
			out[i] = h.start[b+1] // the end of the bucket
		} else {
			out[i] = h.start[b] // the last bucket has no end
		}
	}
	return out
}

// decayFactor mirrors decayingHistogram.decayFactor.
func (h *histogram) decayFactor(t time.Duration) float64 {
	if t > h.ref+h.halfLife*maxDecayExponent {
		h.shiftReference(t)
	}
	return math.Exp2(float64(t-h.ref) / float64(h.halfLife))
}

// shiftReference mirrors shiftReferenceTimestamp: scale every weight by
// 2^((ref-newRef)/halfLife) with newRef rounded to a multiple of halfLife.
func (h *histogram) shiftReference(newRef time.Duration) {
	newRef = newRef.Round(h.halfLife)
	exp := int(math.Floor(float64(h.ref-newRef)/float64(h.halfLife) + 0.5))
	f := math.Ldexp(1, exp)
	for b := h.minB; b <= h.maxB; b++ {
		h.weight[b] *= f
	}
	h.total *= f
	h.updateMinMax()
	h.ref = newRef
}
