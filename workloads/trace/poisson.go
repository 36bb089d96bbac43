package trace

import (
	"math"
	"math/rand/v2"
)

// poisson draws a Poisson variate with mean lambda >= 0: by summing
// exponential gaps for small means and by W. Hörmann's transformed rejection
// with squeeze (PTRS, 1993) otherwise, so that the cost stays bounded.
func poisson(r *rand.Rand, lambda float64) float64 {
	if lambda <= 0 {
		return 0
	}
	if lambda < 10 {
		var k float64
		for t := r.ExpFloat64(); t < lambda; t += r.ExpFloat64() {
			k++
		}
		return k
	}
	b := 0.931 + 2.53*math.Sqrt(lambda)
	a := -0.059 + 0.02483*b
	invAlpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	logLambda := math.Log(lambda)
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + lambda + 0.43)
		if us >= 0.07 && v <= vr {
			return k
		}
		if k < 0 || (us < 0.013 && v > us) {
			continue
		}
		lg, _ := math.Lgamma(k + 1)
		if math.Log(v*invAlpha/(a/(us*us)+b)) <= k*logLambda-lambda-lg {
			return k
		}
	}
}
