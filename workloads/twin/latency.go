package twin

import (
	"math"
	"sort"
)

// latencyCDF is the piecewise-linear distribution of request latency the
// twin assumes from the simulator's quantiles: through (0, 0), (p50, .5),
// (p95, .95), (p99, .99) and (max, 1), where max continues the p95–p99
// slope up to 1 (max = p99 + (p99 − p95)/4). Equal knots make a jump.
type latencyCDF struct {
	x, q [5]float64
}

// latencyLevels are the quantile levels of the simulator's latencies.
var latencyLevels = [3]float64{0.5, 0.95, 0.99}

// newLatencyCDF builds the distribution of the quantiles p50 ≤ p95 ≤ p99
// (noise may disorder them: each is raised to the one below it; negative
// values count as 0).
func newLatencyCDF(p50, p95, p99 float64) latencyCDF {
	p50 = math.Max(p50, 0)
	p95 = math.Max(p95, p50)
	p99 = math.Max(p99, p95)
	return latencyCDF{
		x: [5]float64{0, p50, p95, p99, p99 + (p99-p95)/4},
		q: [5]float64{0, latencyLevels[0], latencyLevels[1], latencyLevels[2], 1},
	}
}

// at is P(latency ≤ x).
func (c *latencyCDF) at(x float64) float64 {
	if x >= c.x[4] {
		return 1
	}
	if x < 0 {
		return 0
	}
	for k := 1; k < len(c.x); k++ {
		if x < c.x[k] { // then c.x[k-1] ≤ x < c.x[k]: a rising segment
			return c.q[k-1] + (c.q[k]-c.q[k-1])*(x-c.x[k-1])/(c.x[k]-c.x[k-1])
		}
	}
	return 1
}

// mean is the distribution's mean latency.
func (c *latencyCDF) mean() float64 {
	var m float64
	for k := 1; k < len(c.x); k++ {
		m += (c.x[k-1] + c.x[k]) / 2 * (c.q[k] - c.q[k-1])
	}
	return m
}

// bucketRow is one quantile constraint on the cumulative bucket fractions
// G: the linear interpolation that histogram_quantile does in the bucket
// (bounds[lo], bounds[hi]] must reach level q at the target, a fraction w
// of the way through the bucket: (1−w)·G[lo] + w·G[hi] = q, with G[-1] = 0
// (the first bucket starts at 0). The bucket must keep at least minMass,
// or the rank would land on its lower bound.
type bucketRow struct {
	lo, hi  int
	w, q    float64
	minMass float64
}

// bucketFitter fills the classic buckets of the request-duration
// histogram. It keeps scratch space: one per goroutine.
type bucketFitter struct {
	bounds []float64
	naive  []float64
	try    []float64
	anchor []bool
}

func newBucketFitter(bounds []float64) *bucketFitter {
	n := len(bounds)
	return &bucketFitter{bounds: bounds, naive: make([]float64, n), try: make([]float64, n), anchor: make([]bool, n)}
}

// fit writes to g (one value per bound) the cumulative fraction of
// requests at or below each bucket bound for a step whose latency
// quantiles are p50, p95 and p99, and returns the mean latency and which
// quantiles Prometheus will reproduce exactly (bit i for latencyLevels[i]).
//
// Prometheus's histogram_quantile interpolates linearly inside the bucket
// where a quantile's rank falls, so filling the buckets with the CDF's
// values at the bounds would reproduce a quantile only up to its bucket's
// width. Instead the values at the two bounds of each quantile's bucket
// are placed so that the interpolation passes exactly through (p50, .5),
// (p95, .95) and (p99, .99): with one quantile in a bucket this leaves
// the bucket's mass free, chosen as close to the CDF's as the neighbouring
// buckets and [0, 1] allow; with two it is fixed. The other bounds take
// the CDF's values clamped between those anchors, so the histogram stays
// monotone. The bounds cannot always hold all three (a bucket holds at
// most two exact quantiles, the first bucket one, and the levels must fit
// in [0, 1]); every reachable subset is placed and, with the CDF at the
// bounds, the candidate whose quantiles come out nearest (sum of relative
// errors) is kept. A quantile above the last bound is answered as that
// bound, so enough mass is kept above it.
func (f *bucketFitter) fit(g []float64, p50, p95, p99 float64) (mean float64, exact uint8) {
	cdf := newLatencyCDF(p50, p95, p99)
	mean = cdf.mean()
	n := len(f.bounds)
	for k, b := range f.bounds {
		f.naive[k] = cdf.at(b)
	}
	upper := 1.0
	var cand [3]bucketRow
	var reachable uint8
	targets := cdf.x[1:4]
	for i, t := range targets {
		if !(t > 0) {
			continue // a bucket above 0 never answers 0
		}
		j := sort.SearchFloat64s(f.bounds, t) // first bound ≥ t
		if j == n {
			upper = math.Min(upper, (latencyLevels[i]+f.naive[n-1])/2)
			continue
		}
		lo, mlo := 0.0, 0.0
		if j > 0 {
			lo, mlo = f.bounds[j-1], f.naive[j-1]
		}
		cand[i] = bucketRow{lo: j - 1, hi: j, w: (t - lo) / (f.bounds[j] - lo), q: latencyLevels[i],
			minMass: math.Min(0.01, (f.naive[j]-mlo)/2)}
		reachable |= 1 << i
	}
	// Candidates: the CDF at the bounds, then the placements of the
	// subsets of the reachable quantiles, all three first; a later one
	// wins only if strictly nearer.
	for k := range g {
		g[k] = math.Min(f.naive[k], upper)
	}
	best := quantileError(g, f.bounds, targets)
	var rows [3]bucketRow
	for mask := uint8(7); mask > 0 && best > 0; mask-- {
		if mask&^reachable != 0 {
			continue
		}
		m := 0
		for i := range 3 { // in bucket order: the targets are sorted
			if mask&(1<<i) != 0 {
				rows[m] = cand[i]
				m++
			}
		}
		if !f.place(f.try, rows[:m], upper) {
			continue
		}
		if e := quantileError(f.try, f.bounds, targets); e < best-1e-12 {
			best = e
			copy(g, f.try)
		}
	}
	for i, t := range targets {
		if t > 0 && t <= f.bounds[n-1] && math.Abs(histogramQuantile(latencyLevels[i], f.bounds, g)-t) <= 1e-9*t {
			exact |= 1 << i
		}
	}
	return mean, exact
}

// histogramQuantile is Prometheus's histogram_quantile over classic
// buckets with cumulative fractions g at bounds (1 at +Inf): the rank's
// bucket, then linear interpolation from its lower bound (0 for the
// first) to its upper one; the +Inf bucket answers the last bound.
func histogramQuantile(q float64, bounds, g []float64) float64 {
	b := sort.Search(len(g), func(i int) bool { return g[i] >= q })
	if b == len(g) {
		return bounds[len(bounds)-1]
	}
	lo, glo := 0.0, 0.0
	if b > 0 {
		lo, glo = bounds[b-1], g[b-1]
	}
	return lo + (bounds[b]-lo)*(q-glo)/(g[b]-glo)
}

// quantileError is the sum of the relative errors of the quantiles
// Prometheus computes from g against targets (p50, p95, p99).
func quantileError(g, bounds, targets []float64) float64 {
	var e float64
	for i, t := range targets {
		if t > 0 {
			e += math.Abs(histogramQuantile(latencyLevels[i], bounds, g)-t) / t
		}
	}
	return e
}

// bucketGroup is the rows of one bucket and the range [a, b] of the
// bucket's mass (its cumulative fraction rises by Δ across it) that the
// buckets to its right admit; one row leaves Δ free, two fix it.
type bucketGroup struct {
	rows       [2]bucketRow
	n          int
	lo, hi     int
	a, b       float64 // range of Δ
	lmin, lmax float64 // range of G[lo] that follows
}

// at is the group's values at its bounds for mass d.
func (gr *bucketGroup) at(d float64) (glo, ghi float64) {
	r := gr.rows[0]
	if gr.lo < 0 {
		return 0, r.q / r.w
	}
	glo = r.q - r.w*d
	return glo, glo + d
}

// place writes to g a monotone histogram in [0, upper] meeting rows
// (sorted by bucket), or reports that none exists. A right-to-left pass
// narrows each bucket's mass to what the later buckets admit; a
// left-to-right pass then picks each mass closest to the CDF's within
// what the earlier buckets left.
func (f *bucketFitter) place(g []float64, rows []bucketRow, upper float64) bool {
	const tol = 1e-12
	var gs [3]bucketGroup
	m := 0
	for _, r := range rows {
		if m > 0 && gs[m-1].hi == r.hi {
			gr := &gs[m-1]
			if gr.n == 2 || gr.lo < 0 || r.w-gr.rows[0].w < 1e-9 {
				return false // a bucket holds two quantiles at distinct places, the first bucket one
			}
			gr.rows[1], gr.n = r, 2
			continue
		}
		gs[m] = bucketGroup{rows: [2]bucketRow{r}, n: 1, lo: r.lo, hi: r.hi}
		m++
	}
	for i := m - 1; i >= 0; i-- {
		gr := &gs[i]
		lh, uh := 0.0, upper // range of G[hi] that the next bucket admits
		if i+1 < m {
			if nx := gs[i+1]; nx.lo == gr.hi {
				lh, uh = nx.lmin, math.Min(nx.lmax, upper)
			} else {
				uh = math.Min(nx.lmax, upper)
			}
		}
		r := gr.rows[0]
		switch {
		case gr.n == 2:
			r2 := gr.rows[1]
			d := (r2.q - r.q) / (r2.w - r.w)
			glo, ghi := gr.at(d)
			if d < math.Max(r.minMass, r2.minMass)-tol || glo < -tol || ghi < lh-tol || ghi > uh+tol {
				return false
			}
			gr.a, gr.b = d, d
		case gr.lo < 0:
			if _, ghi := gr.at(0); ghi < lh-tol || ghi > uh+tol {
				return false
			}
		default:
			gr.a, gr.b = r.minMass, r.q/r.w // G[lo] ≥ 0
			if 1-r.w > tol {
				gr.a = math.Max(gr.a, (lh-r.q)/(1-r.w))
				gr.b = math.Min(gr.b, (uh-r.q)/(1-r.w))
			} else if r.q < lh-tol || r.q > uh+tol {
				return false
			}
			if gr.a > gr.b+tol {
				return false
			}
			gr.b = math.Max(gr.a, gr.b)
		}
		gr.lmin, _ = gr.at(gr.b)
		gr.lmax, _ = gr.at(gr.a)
	}
	clear(f.anchor)
	prev := 0.0 // G at the previous group's upper bound
	for i := range m {
		gr := &gs[i]
		d := gr.a
		if gr.n == 1 && gr.lo >= 0 {
			r := gr.rows[0]
			switch {
			case i > 0 && gs[i-1].hi == gr.lo: // shared bound: G[lo] is set
				d = (r.q - prev) / r.w
			default: // G[lo] ≥ prev
				d = math.Min(gr.b, (r.q-prev)/r.w)
				d = math.Max(gr.a, math.Min(d, f.naive[gr.hi]-f.naive[gr.lo]))
			}
			d = math.Max(gr.a, math.Min(gr.b, d))
		}
		glo, ghi := gr.at(d)
		if gr.lo >= 0 {
			g[gr.lo], f.anchor[gr.lo] = math.Max(glo, prev), true
		}
		g[gr.hi], f.anchor[gr.hi] = math.Min(ghi, upper), true
		prev = g[gr.hi]
	}
	// The other bounds follow the CDF between the anchors around them.
	lo := 0.0
	for k := range g {
		if f.anchor[k] {
			lo = g[k]
			continue
		}
		hi := upper
		for j := k + 1; j < len(g); j++ {
			if f.anchor[j] {
				hi = g[j]
				break
			}
		}
		g[k] = math.Max(lo, math.Min(hi, f.naive[k]))
		lo = g[k]
	}
	return true
}
