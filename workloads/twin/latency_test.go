package twin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/server"
)

// promQuantile is Prometheus's histogram_quantile on classic buckets
// (promql bucketQuantile): the rank's bucket, then linear interpolation
// from the bucket's lower bound (0 for the first bucket) to its upper one;
// the +Inf bucket answers the largest finite bound. cum has one value per
// bound and a last one for +Inf.
func promQuantile(q float64, bounds, cum []float64) float64 {
	n := cum[len(cum)-1]
	if n == 0 {
		return math.NaN()
	}
	rank := q * n
	b := sort.Search(len(cum)-1, func(i int) bool { return cum[i] >= rank })
	if b == len(cum)-1 {
		return bounds[len(bounds)-1]
	}
	start, count := 0.0, cum[b]
	if b > 0 {
		start = bounds[b-1]
		count -= cum[b-1]
		rank -= cum[b-1]
	}
	return start + (bounds[b]-start)*(rank/count)
}

// bucketWidth is the width of the bucket holding t (0 above the last bound).
func bucketWidth(bounds []float64, t float64) float64 {
	j := sort.SearchFloat64s(bounds, t)
	switch {
	case j == len(bounds):
		return 0
	case j == 0:
		return bounds[0]
	}
	return bounds[j] - bounds[j-1]
}

func TestLatencyCDF(t *testing.T) {
	c := newLatencyCDF(0.010, 0.030, 0.050)
	for _, tc := range []struct{ x, want float64 }{
		{-1, 0}, {0, 0}, {0.005, 0.25}, {0.010, 0.5}, {0.020, 0.725}, {0.030, 0.95}, {0.040, 0.97}, {0.050, 0.99}, {0.055, 1}, {1, 1},
	} {
		assert.InDelta(t, tc.want, c.at(tc.x), 1e-12, "F(%g)", tc.x)
	}
	// Mean of the piecewise-uniform mixture.
	want := 0.005*0.5 + 0.020*0.45 + 0.040*0.04 + 0.0525*0.01
	assert.InDelta(t, want, c.mean(), 1e-15)

	// Disordered (noisy) quantiles are raised; equal ones make a jump.
	d := newLatencyCDF(0.020, 0.010, 0.010)
	assert.Equal(t, [5]float64{0, 0.020, 0.020, 0.020, 0.020}, d.x)
	assert.InDelta(t, 0.25, d.at(0.010), 1e-12)
	assert.Equal(t, 1.0, d.at(0.020))
}

func TestFitBucketsReproducesQuantiles(t *testing.T) {
	bounds := server.DurationBuckets
	const p50, p95, p99 = 1, 2, 4 // bits of the exact quantiles
	for _, tc := range []struct {
		name          string
		p50, p95, p99 float64
		exact         uint8 // quantiles Prometheus must reproduce exactly
	}{
		{"one per bucket", 0.030, 0.150, 0.400, p50 | p95 | p99},
		{"two in a bucket", 0.055, 0.098, 0.200, p50 | p95 | p99},
		// Infeasible sets: the nearest candidate (sum of relative errors) wins.
		{"adjacent buckets, levels do not fit", 0.020, 0.040, 0.080, p50 | p99},
		{"three in a bucket", 0.300, 0.350, 0.450, p95},
		{"first bucket", 0.0008, 0.004, 0.008, p50 | p95 | p99},
		{"first bucket too steep", 0.0004, 0.0008, 0.003, p99},
		{"tail beyond 10 s", 2, 8, 12, p50 | p95},
		{"all equal", 0.2, 0.2, 0.2, 0},
		{"no latency", 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := make([]float64, len(bounds))
			mean, exact := newBucketFitter(bounds).fit(g, tc.p50, tc.p95, tc.p99)
			cdf := newLatencyCDF(tc.p50, tc.p95, tc.p99)
			assert.InDelta(t, cdf.mean(), mean, 1e-15)
			assert.Equal(t, tc.exact, exact, "exact quantiles")
			cum := append(append([]float64(nil), g...), 1)
			for k := range cum {
				require.GreaterOrEqual(t, cum[k], 0.0)
				require.LessOrEqual(t, cum[k], 1.0)
				if k > 0 {
					require.GreaterOrEqual(t, cum[k], cum[k-1], "cumulative buckets must not decrease: %v", cum)
				}
			}
			for i, want := range []float64{tc.p50, tc.p95, tc.p99} {
				got := promQuantile(latencyLevels[i], bounds, cum)
				switch {
				case want > bounds[len(bounds)-1]:
					assert.Equal(t, bounds[len(bounds)-1], got, "q%g beyond the last bound", latencyLevels[i])
				case tc.exact&(1<<i) != 0:
					assert.InDelta(t, want, got, 1e-9*want, "q%g", latencyLevels[i])
				default:
					assert.InDelta(t, want, got, bucketWidth(bounds, want), "q%g within its bucket", latencyLevels[i])
				}
			}
		})
	}
}

// TestFitBucketsRandom checks, over random latency profiles spanning the
// buckets, that the fitted buckets stay a valid histogram, reproduce every
// quantile they claim exactly, keep every quantile within its bucket, are
// never further off than the CDF's values at the bounds, and reproduce all
// three quantiles far more often.
func TestFitBucketsRandom(t *testing.T) {
	bounds := server.DurationBuckets
	r := rand.New(rand.NewPCG(7, 11))
	f := newBucketFitter(bounds)
	g := make([]float64, len(bounds))
	naive := make([]float64, len(bounds)+1)
	var exactAll, p99Exact, naiveAll, in int
	const n = 5000
	for i := range n {
		p50 := math.Exp(math.Log(0.0005) + r.Float64()*math.Log(8/0.0005)) // 0.5 ms – 8 s
		p95 := p50 * (1 + 4*r.Float64())
		p99 := p95 * (1 + 2*r.Float64())
		_, exact := f.fit(g, p50, p95, p99)
		cum := append(append([]float64(nil), g...), 1)
		cdf := newLatencyCDF(p50, p95, p99)
		for k, b := range bounds {
			naive[k] = cdf.at(b)
		}
		naive[len(bounds)] = 1
		for k := 1; k < len(cum); k++ {
			require.GreaterOrEqual(t, cum[k], cum[k-1], "case %d: %v", i, cum)
		}
		var errFit, errNaive float64
		all, allNaive := true, true
		for j, want := range []float64{p50, p95, p99} {
			q := latencyLevels[j]
			got := promQuantile(q, bounds, cum)
			if want > bounds[len(bounds)-1] {
				require.Equal(t, bounds[len(bounds)-1], got)
				all, allNaive = false, false
				continue
			}
			in++
			ok := math.Abs(got-want) <= 1e-9*want
			if exact&(1<<j) != 0 {
				require.True(t, ok, "case %d q%g: claimed exact, got %g want %g", i, q, got, want)
			}
			require.InDelta(t, want, got, bucketWidth(bounds, want), fmt.Sprintf("case %d q%g: p50 %g p95 %g p99 %g", i, q, p50, p95, p99))
			if j == 2 && ok {
				p99Exact++
			}
			all = all && ok
			qn := promQuantile(q, bounds, naive)
			allNaive = allNaive && math.Abs(qn-want) <= 1e-9*want
			errFit += math.Abs(got-want) / want
			errNaive += math.Abs(qn-want) / want
		}
		require.LessOrEqual(t, errFit, errNaive+1e-9, "case %d: worse than the CDF at the bounds", i)
		if all {
			exactAll++
		}
		if allNaive {
			naiveAll++
		}
	}
	t.Logf("of %d random profiles: all three quantiles exact %d (CDF at the bounds: %d), p99 exact %d", n, exactAll, naiveAll, p99Exact)
	assert.Greater(t, exactAll, n/3)
	assert.Greater(t, p99Exact, n*2/3)
}
