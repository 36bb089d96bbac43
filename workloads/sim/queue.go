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

// queueWait approximates the wait before service in a pod with c cores
// (c ≥ 1, fractional allowed) at utilisation rho < 1, for service times
// of squared coefficient of variation cs2 (Allen–Cunneen M/G/c): pw is
// the probability of waiting (Erlang C) and mean the mean wait in units of
// the service time, C(c, cρ)/(c(1−ρ)) · (1+cs2)/2. Both are interpolated
// linearly between the integer core counts around c.
func queueWait(c, rho, cs2 float64) (pw, mean float64) {
	at := func(n float64) (float64, float64) {
		p := erlangC(int(n), n*rho)
		return p, p / (n * (1 - rho)) * (1 + cs2) / 2
	}
	lo := math.Floor(c)
	f := c - lo
	p0, m0 := at(lo)
	if f == 0 {
		return p0, m0
	}
	p1, m1 := at(lo + 1)
	return (1-f)*p0 + f*p1, (1-f)*m0 + f*m1
}

// waitQuantile is the q-quantile of a wait that is 0 with probability
// 1−pw and otherwise exponential, with mean wait mean overall.
func waitQuantile(q, pw, mean float64) float64 {
	if pw <= 0 || mean <= 0 || q <= 1-pw {
		return 0
	}
	return mean / pw * math.Log(pw/(1-q))
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
