package sim

import "math"

// erlangC is the probability that an arrival waits in an M/M/c queue with
// c servers and offered load a = λ/μ (a < c).
func erlangC(c int, a float64) float64 {
	if c <= 0 {
		return 1
	}
	b := 1.0 // Erlang B, by the stable recursion
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	rho := a / float64(c)
	return b / (1 - rho*(1-b))
}

// slowdown is the mean response time over the service time of a
// processor-sharing pod with c cores (c ≥ 1, fractional allowed) at
// utilisation rho < 1: 1 + C(c, cρ)/(c(1−ρ)), interpolated linearly
// between the integer core counts around c. For c = 1 it is 1/(1−ρ).
func slowdown(c, rho float64) float64 {
	lo := math.Floor(c)
	f := c - lo
	s := func(n float64) float64 {
		return 1 + erlangC(int(n), n*rho)/(n*(1-rho))
	}
	if f == 0 {
		return s(lo)
	}
	return (1-f)*s(lo) + f*s(lo+1)
}

// cfsPeriod is the CFS bandwidth period of a CPU limit.
const cfsPeriod = 0.1

// throttled is how long a request needing cpu seconds takes alone in a pod
// limited to limit < 1 cores: it runs at full speed until the period's
// quota is spent, then waits for the next period.
func throttled(cpu, limit float64) float64 {
	if limit >= 1 || cpu <= 0 {
		return cpu
	}
	q := limit * cfsPeriod
	n := math.Ceil(cpu/q) - 1
	if n < 0 {
		n = 0
	}
	return n*cfsPeriod + (cpu - n*q)
}

// normQ is the standard normal upper tail P(Z > z).
func normQ(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// expQuantile is the q-quantile of an exponential of mean 1.
func expQuantile(q float64) float64 { return -math.Log1p(-q) }
