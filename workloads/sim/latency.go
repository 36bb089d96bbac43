package sim

import "math"

// queuedBytes is what a request waiting for one of the server's bounded
// concurrency slots holds: a goroutine's stack, the request and the
// connection's buffers (RequestBytes, measured), not the working set of
// running requests.
const queuedBytes = RequestBytes

// delays is the latency model of one pod at a steady completion rate,
// without the backlog carried between steps: CFS throttling of a request
// alone, queueing for the pod's cores, and the throttling wait of periods
// whose arrivals exceed the quota.
type delays struct {
	thr     float64 // extra seconds a request alone spends throttled
	pw, wq  float64 // probability of queueing and the mean queue wait
	pt, gap float64 // share of requests waiting for the next CFS period, and its length
	ws      float64 // mean wait at the external services
}

// newDelays models a pod of m with CPU limit limit at utilisation rho
// (< 1) completing perPod requests/s, over steps of dt seconds; shape
// scales the queueing delay's spread.
func newDelays(m *Model, limit, rho, perPod, dt, shape float64) delays {
	alone := throttled(m.CPU, limit)
	d := delays{thr: alone - m.CPU}
	var wq float64
	// Below one core the pod is one thread that runs at full speed until
	// the period's quota is spent: a request's queue wait is behind the
	// requests ahead of it at full speed (each busy for alone seconds), so
	// the server is busy a share λ·alone of the time, not the quota's
	// utilisation rho = λ·CPU/limit. The two meet for requests much longer
	// than the quota (alone → CPU/limit). Periods whose demand exceeds the
	// quota add the throttling wait below. With rho as the server's
	// utilisation the model put app-0001 (4 ms requests at half a core, 60 %
	// of its quota) at 24 ms p95 against 12 ms real (docs/simulator.md).
	c, rc := math.Max(1, limit), rho
	if limit < 1 && m.CPU > 0 {
		rc = rho * math.Min(1, limit*alone/m.CPU)
	}
	d.pw, wq = queueWait(c, rc, m.CV2)
	wq *= alone
	// Near saturation the stationary formula overstates a queue that has
	// only the step to build up: cap the mean number waiting at the
	// expected height of a driftless reflected random walk over the step,
	// sqrt(2λT(1+cs²)/π) (heavy-traffic diffusion, Poisson arrivals).
	if perPod > 0 && wq > 0 {
		if capW := math.Sqrt(2*perPod*dt*(1+m.CV2)/math.Pi) / perPod; wq > capW {
			wq = capW
		}
	}
	d.wq = wq * shape
	// Under a quota below one core, a period whose arrivals need more CPU
	// than the quota throttles the pod: requests arriving after the quota
	// is spent wait, uniformly, up to the rest of the period.
	if limit < 1 && perPod > 0 {
		lp := perPod * cfsPeriod
		quota := limit * cfsPeriod
		work, sd := lp*m.CPU, math.Sqrt(lp*m.CPU*m.CPU*(1+m.CV2))
		d.pt = normQ((quota-work)/sd) / 2 // about half a throttled period's requests wait
		d.gap = cfsPeriod - quota
	}
	return d
}

// quantile is the q-quantile of the latency of a request whose isolated
// service time at that quantile is iso.
func (d delays) quantile(iso, q float64) float64 {
	var thrQ float64
	if d.pt > 0 && q > 1-d.pt {
		thrQ = d.gap * (q - (1 - d.pt)) / d.pt
	}
	// The services' wait is taken as exponential: a processor-sharing
	// server's response time is close to it at moderate load.
	return iso + d.thr + waitQuantile(q, d.pw, d.wq) + thrQ - d.ws*math.Log1p(-q)
}

// mean is the mean latency for a mean isolated service time of mean.
func (d delays) mean(mean float64) float64 {
	return mean + d.thr + d.wq + d.pt*d.gap/2 + d.ws
}

// serviceCapacity is the requests/s the application's external services
// complete at most with cores CPU cores of which others take shared
// CPU-seconds per request (+Inf when cores is 0, unlimited, or the
// application does not use them).
func (m *Model) serviceCapacity(cores, shared float64) float64 {
	if cores <= 0 || m.ServiceCPU <= 0 {
		return math.Inf(1)
	}
	return cores / (m.ServiceCPU + shared)
}

// serviceWait is the mean time a request waits at the external services
// beyond its calibrated round trip when their cores run at utilisation
// rho: the services' processes share their cores (PostgreSQL runs a
// process per connection), so a processor-sharing server's D·ρ/(1−ρ), with
// ρ capped at maxRho (a saturated service bounds the throughput instead).
func (m *Model) serviceWait(rho, maxRho float64) float64 {
	rho = math.Min(rho, maxRho)
	if !(rho > 0) {
		return 0
	}
	return m.ServiceCPU * rho / (1 - rho)
}

// slots is the number of requests a pod runs at once when the server
// bounds its concurrency to concurrency (0: unbounded).
func slots(concurrency int) float64 {
	if concurrency <= 0 {
		return math.Inf(1)
	}
	return float64(concurrency)
}

// memory is a pod's working set with n requests in it of which at most k
// run: the running ones hold their working sets, the rest wait holding
// queuedBytes each.
func (m *Model) memory(n, k float64) float64 {
	run := math.Min(n, k)
	return m.BaseMemory + m.MemoryPerRequest*math.Max(run-1, 0) + queuedBytes*math.Max(n-run, 0)
}

// requestsAt is the number of requests in a pod whose working set reaches
// limit (the inverse of memory), or 0 when even an idle pod does not fit.
func (m *Model) requestsAt(limit, k float64) float64 {
	if limit <= m.BaseMemory {
		return 0
	}
	if m.MemoryPerRequest <= 0 {
		return math.Inf(1)
	}
	n := (limit-m.BaseMemory)/m.MemoryPerRequest + 1
	if n <= k {
		return n
	}
	return k + (limit-m.memory(k, k))/queuedBytes
}
