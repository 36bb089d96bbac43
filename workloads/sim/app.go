package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Allocation is what an autoscaler sets for an application.
type Allocation struct {
	Replicas int
	CPU      float64 // cores per pod (limit = request)
	Memory   float64 // bytes per pod (limit = request)
}

// Load is an application's arrival rate per simulation step: a shape shared
// between applications (mean about 1), the step to start at, and a scale
// in requests/s. The shape wraps around at its end.
type Load struct {
	Shape  []float64
	Offset int
	Scale  float64
}

// At is the arrival rate in requests/s at step t.
func (l Load) At(t int) float64 {
	return l.Shape[(l.Offset+t)%len(l.Shape)] * l.Scale
}

// App is one simulated application.
type App struct {
	Name  string
	Chain []segments.Spec
	// Speed is the node's CPU speed relative to the calibration machine.
	Speed float64
	// Noise is the relative standard deviation of measurement noise.
	Noise   float64
	SLO     gym.SLO
	Load    Load
	Initial Allocation
	// Concurrency is how many requests a pod's server runs at once; the
	// rest wait in its queue holding little memory (0: unbounded).
	Concurrency int
	// Model, when set, is the application's per-request model as given
	// (one fitted from recorded steps, controller/bootstrap), used instead
	// of the one derived from Chain and the calibration profile; Chain may
	// then be empty, and scenarios that change the chain cannot be
	// injected.
	Model *Model
}

// Validate names the first problem of a.
func (a App) Validate() error {
	var errs []error
	if a.Name == "" {
		errs = append(errs, errors.New("name: empty"))
	}
	if len(a.Chain) == 0 && a.Model == nil {
		errs = append(errs, errors.New("chain: empty (and no model given)"))
	}
	if a.Model != nil {
		if err := a.Model.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if !(a.Speed > 0) {
		errs = append(errs, fmt.Errorf("speed: %g must be positive", a.Speed))
	}
	if !(a.Noise >= 0) || a.Noise > 1 {
		errs = append(errs, fmt.Errorf("noise: %g outside [0, 1]", a.Noise))
	}
	if err := a.SLO.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(a.Load.Shape) == 0 {
		errs = append(errs, errors.New("load.shape: empty"))
	}
	if a.Load.Offset < 0 || !(a.Load.Scale >= 0) {
		errs = append(errs, fmt.Errorf("load: offset %d and scale %g must not be negative", a.Load.Offset, a.Load.Scale))
	}
	if a.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency: %d must not be negative (0 is unbounded)", a.Concurrency))
	}
	if a.Initial.Replicas < 1 || !(a.Initial.CPU > 0) || !(a.Initial.Memory > 0) {
		errs = append(errs, fmt.Errorf("initial: %+v needs a replica and positive limits", a.Initial))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("app %q: %w", a.Name, err)
	}
	return nil
}

// backoffReset is how long pods must run without crashing before the
// restart back-off starts over at its first delay.
const backoffReset = 600

// state is the dynamic part of one application; it is a few hundred bytes.
type state struct {
	model Model
	alloc Allocation // in effect (target of any transition)
	prev  Allocation // before the running vertical transition
	vLeft float64    // seconds left of the vertical transition

	ready    float64 // pods serving
	pending  float64 // pods starting
	pendLeft float64 // seconds until they serve
	down     float64 // pods restarting after an OOM kill
	downLeft float64
	streak   int     // OOM kills since the back-off was last reset
	healthy  float64 // seconds without a crash since the last kill

	backlog     float64 // requests queued beyond what the pods process
	t           int     // steps since the application's trace offset
	started     bool    // whether a step was simulated since reset
	step        int     // steps in the current episode
	prevArrival float64

	m      gym.Metrics
	sp     float64
	reward float64
	rng    *rand.Rand
}

// reset puts s back at the application's initial allocation, with noise
// from seed, at its trace offset or, with randomStart, at a point of its
// trace drawn from seed.
func (s *state) reset(a *App, m Model, seed uint64, randomStart bool) {
	*s = state{
		model: m,
		alloc: a.Initial,
		prev:  a.Initial,
		ready: float64(a.Initial.Replicas),
		rng:   rand.New(rand.NewPCG(seed, 0x5EED)),
	}
	if randomStart {
		s.t = rand.New(rand.NewPCG(seed, 0x57A27)).IntN(len(a.Load.Shape))
	}
	s.prevArrival = a.Load.At(s.t)
}

// advance simulates one step of dt seconds under allocation next.
func (s *state) advance(a *App, next Allocation, c *config) {
	dt := c.step
	m := &s.model
	if s.started {
		s.prevArrival = s.m.ArrivalRate
	}
	s.started = true

	// Vertical change: in place after a short delay, or by restarting the
	// pods (the old ones serve until the new ones are ready).
	if next.CPU != s.alloc.CPU || next.Memory != s.alloc.Memory {
		if s.vLeft <= 0 {
			s.prev = s.alloc
		}
		s.vLeft = c.resizeDelay
		if c.restart {
			s.vLeft = c.coldStart
		}
	}
	// Horizontal change: new pods start cold; removals take starting pods
	// first, then restarting ones, then serving ones.
	total := s.ready + s.pending + s.down
	want := float64(next.Replicas)
	if want > total {
		s.pending += want - total
		s.pendLeft = c.coldStart
	} else if want < total {
		cut := total - want
		for _, p := range []*float64{&s.pending, &s.down, &s.ready} {
			d := math.Min(cut, *p)
			*p -= d
			cut -= d
		}
	}
	s.alloc = next

	// Pod-seconds of service in this step.
	podSec := s.ready*dt + s.pending*math.Max(0, dt-s.pendLeft) + s.down*math.Max(0, dt-s.downLeft)
	if s.pendLeft <= dt {
		s.ready += s.pending
		s.pending, s.pendLeft = 0, 0
	} else {
		s.pendLeft -= dt
	}
	if s.downLeft <= dt {
		s.ready += s.down
		s.down, s.downLeft = 0, 0
	} else {
		s.downLeft -= dt
	}
	pods := podSec / dt
	limit, memLimit := next.CPU, next.Memory
	if s.vLeft > 0 {
		f := math.Min(s.vLeft, dt) / dt
		limit = f*s.prev.CPU + (1-f)*next.CPU
		memLimit = math.Min(s.prev.Memory, next.Memory)
		s.vLeft = math.Max(0, s.vLeft-dt)
	}

	// Pods whose limit is below the base working set crash as they start
	// and serve nothing.
	crash := m.BaseMemory >= memLimit
	if crash {
		pods = 0
	}

	// Arrivals, capacity (Model.Capacity per serving pod), backlog and
	// timeouts.
	lambda := a.Load.At(s.t)
	arrived := lambda * dt
	k := slots(a.Concurrency)
	mu := 0.0 // requests/s the serving pods can complete
	if pods > 0 {
		mu = pods * m.Capacity(limit, a.Concurrency)
	}
	demand := arrived + s.backlog
	// External services of limited capacity: their utilisation at the rate
	// the pods would send them sets the wait each request adds there, in
	// its slot, and they bound the throughput.
	ws, podMu := 0.0, mu
	if svc := m.serviceCapacity(c.serviceCores, c.serviceShared); !math.IsInf(svc, 1) && pods > 0 {
		// The pods' slots hold requests through their wait at the
		// services, so the pair sustains the largest rate x whose wait
		// still leaves the slots room for x (at most the pods' CPU and the
		// services' own capacity): with few slots the population at the
		// services is bounded and x stays below svc.
		podAt := func(x float64) float64 {
			return pods * m.capacity(limit, a.Concurrency, m.serviceWait(x/svc, c.maxRho))
		}
		lo, hi := 0.0, math.Min(mu, svc*c.maxRho)
		if podAt(hi) >= hi {
			lo = hi
		}
		for range 50 {
			if hi-lo <= 1e-9*hi {
				break
			}
			if x := (lo + hi) / 2; podAt(x) >= x {
				lo = x
			} else {
				hi = x
			}
		}
		mu = lo
		rate := math.Min(demand/dt, mu)
		ws, podMu = m.serviceWait(rate/svc, c.maxRho), podAt(rate)
	}
	done := math.Min(demand, mu*dt)
	left := demand - done
	dropped := math.Max(0, left-mu*c.timeout)
	left -= dropped
	// The pods' own utilisation, for their queueing: saturated when they,
	// not the services, leave requests behind.
	rho := 0.0
	if podMu > 0 && !math.IsInf(podMu, 1) {
		rho = done / dt / podMu
	}
	if (left > 1e-9 && podMu <= mu) || rho > c.maxRho {
		rho = c.maxRho
	}

	// Latency: isolated service, CFS throttling, processor-sharing
	// queueing on fractional cores, and the backlog's wait.
	perPod := 0.0 // completions per second per serving pod
	if pods > 0 {
		perPod = done / dt / pods
	}
	d := newDelays(m, limit, rho, perPod, dt, c.delayShape)
	d.ws = ws
	var wlo, whi float64 // the backlog's wait rises or falls linearly over the step
	if mu > 0 && !math.IsInf(mu, 1) {
		wlo, whi = math.Min(s.backlog, left)/mu, math.Max(s.backlog, left)/mu
	}
	lat := func(iso, q float64) float64 { return d.quantile(iso, q) + wlo + q*(whi-wlo) }
	meanLat := d.mean(m.P50) + (wlo+whi)/2

	// Memory: requests in the pod by Little's law (the backlog's included);
	// the k running hold their working sets, the queued little. The peak
	// within the step adds Poisson-like spread.
	inflight := perPod * meanLat
	mem := m.memory(inflight, k)
	peakN := inflight + 3*math.Sqrt(inflight)
	peak := m.memory(peakN, k)
	// CPU spent this step, including on requests a crash then loses.
	cpuUsed := math.Min(done*m.CPU/dt+pods*c.idleCPU, pods*limit)
	kills := 0
	switch {
	case crash:
		kills = int(math.Round(s.ready)) // every pod that started crashed
	case pods > 0 && peak > memLimit:
		p := 1.0
		if nmax := m.requestsAt(memLimit, k); !math.IsInf(nmax, 1) {
			p = math.Min(1, normQ((nmax-inflight)/math.Sqrt(inflight+1e-9))*dt/math.Max(meanLat, 0.05))
		}
		for range int(math.Round(s.ready)) {
			if s.rng.Float64() < p {
				kills++
			}
		}
	}
	if kills > 0 {
		s.streak++
		k := float64(kills)
		s.ready -= k
		s.down += k
		s.downLeft = math.Min(c.restartDelay*math.Pow(2, float64(s.streak-1)), c.maxBackoff)
		lost := math.Min(done, k*inflight)
		done -= lost
		dropped += lost
		s.healthy = 0
	} else if s.down == 0 {
		// Kubernetes resets the restart back-off after ten minutes of
		// running without a crash.
		if s.healthy += dt; s.healthy >= backoffReset {
			s.streak = 0
		}
	}
	s.backlog = left

	// What Prometheus would report.
	g := gym.Metrics{
		Replicas:      next.Replicas,
		ReadyReplicas: int(math.Round(pods)), // averaged over the step, as a scrape sees it
		CPULimit:      next.CPU,
		MemoryLimit:   next.Memory,
		CPUUsage:      cpuUsed,
		MemoryUsage:   pods * math.Min(mem, memLimit),
		MemoryPeak:    math.Min(peak, memLimit),
		IORate:        done / dt * m.IOBytes,
		NetRate:       done / dt * m.NetBytes,
		ArrivalRate:   lambda,
		ProcessedRate: done / dt,
		DroppedRate:   dropped / dt,
		OOMKills:      kills,
	}
	if done > 0 {
		g.LatencyP50 = lat(m.P50, 0.5)
		g.LatencyP95 = lat(m.P95, 0.95)
		g.LatencyP99 = lat(m.P99, 0.99)
	}
	if a.Noise > 0 {
		for _, v := range []*float64{&g.CPUUsage, &g.MemoryUsage, &g.MemoryPeak, &g.IORate, &g.NetRate, &g.LatencyP50, &g.LatencyP95, &g.LatencyP99} {
			*v *= math.Max(0, 1+a.Noise*s.rng.NormFloat64())
		}
	}
	s.m = g
	s.sp = gym.SLOPreservation(a.SLO, g)
	cu, mu2 := gym.Utilization(g)
	s.reward = gym.Reward(c.alpha, s.sp, cu, mu2)
	s.t++
	s.step++
}

// observe writes the AWARE state of the last step to dst.
func (s *state) observe(dst []float64, c *config) {
	gym.State(dst, s.m, s.sp, s.prevArrival, c.bounds, c.caps)
}
