package sim

import "math"

// Steady is the stationary behaviour of one application under an
// allocation at a constant arrival rate: what one step of the simulator
// reports once the load has held long enough, without noise.
type Steady struct {
	// CPUUtil is the pods' CPU usage over their limits.
	CPUUtil float64
	// LatencyP50, LatencyP95 and LatencyP99 are in seconds; +Inf when the
	// pods cannot keep up with the load.
	LatencyP50, LatencyP95, LatencyP99 float64
	// Memory and MemoryPeak are a pod's mean and peak working set in bytes.
	Memory, MemoryPeak float64
}

// Stable reports whether the pods keep up with the load.
func (s Steady) Stable() bool { return !math.IsInf(s.LatencyP99, 1) }

// SteadyState evaluates model m under allocation a (all replicas ready) at
// lambda requests/s spread evenly over the replicas, with the server
// running at most concurrency requests per pod (0: unbounded), over steps
// of dt seconds, with the default delay shape. It is the simulator's own
// latency and memory model, so that SLOs, feasibility checks and tuning
// agree with what the simulator then reports.
func SteadyState(m Model, a Allocation, lambda float64, concurrency int, dt float64) Steady {
	c := defaultConfig()
	pods := float64(max(a.Replicas, 0))
	if pods == 0 || !(a.CPU > 0) || lambda < 0 {
		return Steady{LatencyP50: math.Inf(1), LatencyP95: math.Inf(1), LatencyP99: math.Inf(1)}
	}
	k := slots(concurrency)
	perPod := lambda / pods
	mu := m.Capacity(a.CPU, concurrency)
	rho := perPod / mu
	cpu := math.Min(perPod*m.CPU+c.idleCPU, a.CPU) / a.CPU
	if rho >= c.maxRho {
		peak := m.memory(k, k)
		return Steady{CPUUtil: cpu, LatencyP50: math.Inf(1), LatencyP95: math.Inf(1), LatencyP99: math.Inf(1), Memory: peak, MemoryPeak: peak}
	}
	d := newDelays(&m, a.CPU, rho, perPod, dt, c.delayShape)
	n := perPod * d.mean(m.P50)
	return Steady{
		CPUUtil:    cpu,
		LatencyP50: d.quantile(m.P50, 0.5),
		LatencyP95: d.quantile(m.P95, 0.95),
		LatencyP99: d.quantile(m.P99, 0.99),
		Memory:     m.memory(n, k),
		MemoryPeak: m.memory(n+3*math.Sqrt(n), k),
	}
}

// Capacity is the requests/s one pod with a CPU limit of cpu cores
// completes at most: limit/C on its cores, and concurrency/(mean service
// time) in its slots when the server bounds them (0: unbounded).
func (m Model) Capacity(cpu float64, concurrency int) float64 {
	return m.capacity(cpu, concurrency, 0)
}

// capacity is Capacity when every request also waits ws seconds at the
// external services, holding its slot.
func (m Model) capacity(cpu float64, concurrency int, ws float64) float64 {
	return math.Min(cpu/m.CPU, slots(concurrency)/(m.P50+ws))
}

// WorkingSet is a pod's working set in bytes with requests in it, of
// which at most concurrency run (0: unbounded) and the rest wait.
func (m Model) WorkingSet(requests float64, concurrency int) float64 {
	return m.memory(math.Max(requests, 0), slots(concurrency))
}
