package gym

import (
	"fmt"
	"math"
)

// Bounds are the limits an autoscaler may set (the MPA's constraints and
// resource policy). Defaults are the authors' artifact bounds.
type Bounds struct {
	MinReplicas, MaxReplicas int
	MinCPU, MaxCPU           float64 // cores per pod
	MinMemory, MaxMemory     float64 // bytes per pod
}

// MiB is 2^20 bytes.
const MiB = 1 << 20

// DefaultBounds are the artifact's bounds, replicas 1–20, CPU 128–2048m and
// memory up to 3072 MiB, but with a memory floor of 32 MiB instead of the
// artifact's 256 MiB: a loaded workload server holds 45–60 MiB for most
// chains (sim.ServerIdleBytes and ServerLoadBytes, measured), so a 256 MiB
// floor caps memory utilisation near 20 % and leaves the reward's memory
// term little signal; the floor must sit below every pod's need, not above.
func DefaultBounds() Bounds {
	return Bounds{MinReplicas: 1, MaxReplicas: 20, MinCPU: 0.128, MaxCPU: 2.048, MinMemory: 32 * MiB, MaxMemory: 3072 * MiB}
}

// Validate names the first inconsistent bound.
func (b Bounds) Validate() error {
	switch {
	case b.MinReplicas < 0 || b.MaxReplicas < b.MinReplicas || b.MaxReplicas == 0:
		return fmt.Errorf("bounds: replicas [%d, %d] is not a non-empty positive range", b.MinReplicas, b.MaxReplicas)
	case !(b.MinCPU > 0) || b.MaxCPU < b.MinCPU:
		return fmt.Errorf("bounds: cpu [%g, %g] is not a non-empty positive range", b.MinCPU, b.MaxCPU)
	case !(b.MinMemory > 0) || b.MaxMemory < b.MinMemory:
		return fmt.Errorf("bounds: memory [%g, %g] is not a non-empty positive range", b.MinMemory, b.MaxMemory)
	}
	return nil
}

// SLOKind tells what an SLO constrains.
type SLOKind uint8

const (
	// NoSLO means SP is always 1.
	NoSLO SLOKind = iota
	// LatencySLO bounds the p99 latency from above.
	LatencySLO
	// ThroughputSLO bounds the completed request rate from below.
	ThroughputSLO
)

// SLO is an application's service-level objective.
type SLO struct {
	Kind SLOKind
	// Target is seconds of p99 latency, or requests/s of throughput.
	Target float64
}

// String formats the SLO as "p99 ≤ 12.5 ms", "≥ 40 req/s" or "none".
func (s SLO) String() string {
	switch s.Kind {
	case LatencySLO:
		return fmt.Sprintf("p99 ≤ %.4g ms", s.Target*1000)
	case ThroughputSLO:
		return fmt.Sprintf("≥ %.4g req/s", s.Target)
	case NoSLO:
		return "none"
	}
	return fmt.Sprintf("SLO(kind %d, %g)", s.Kind, s.Target)
}

// Validate reports a bad target.
func (s SLO) Validate() error {
	if s.Kind > ThroughputSLO {
		return fmt.Errorf("slo: unknown kind %d", s.Kind)
	}
	if s.Kind != NoSLO && !(s.Target > 0) {
		return fmt.Errorf("slo: target %g must be positive", s.Target)
	}
	return nil
}

// Metrics is one step of one application, as Prometheus would report it.
type Metrics struct {
	Replicas      int     // desired pods
	ReadyReplicas int     // pods ready at the end of the step
	CPULimit      float64 // cores per pod
	MemoryLimit   float64 // bytes per pod
	CPUUsage      float64 // cores, summed over pods, mean over the step
	MemoryUsage   float64 // bytes, summed over pods, mean over the step
	MemoryPeak    float64 // bytes, the largest per-pod working set in the step
	IORate        float64 // disk bytes/s read and written, summed over pods
	NetRate       float64 // network bytes/s received and sent, summed over pods
	ArrivalRate   float64 // requests/s offered
	ProcessedRate float64 // requests/s completed
	DroppedRate   float64 // requests/s lost (timed out, or killed with their pod)
	LatencyP50    float64 // seconds
	LatencyP95    float64 // seconds
	LatencyP99    float64 // seconds
	OOMKills      int     // pods OOM-killed during the step
}

// Info is what an environment reports besides the observation.
type Info struct {
	Step    int // steps since Reset
	Metrics Metrics
	SP      float64 // SLO preservation ratio of the step
	// SLOViolated is SP < 1.
	SLOViolated bool
}

// SLOPreservation is SP = min(SLO / measured, 1) for a latency SLO and
// min(measured / SLO, 1) for a throughput SLO; 1 without an SLO. A step
// with no traffic preserves a latency SLO; a throughput SLO is judged
// against what was offered, so an idle step preserves it too.
func SLOPreservation(slo SLO, m Metrics) float64 {
	switch slo.Kind {
	case LatencySLO:
		if m.ProcessedRate <= 0 && m.DroppedRate <= 0 {
			return 1
		}
		if m.ProcessedRate <= 0 || !(m.LatencyP99 > 0) {
			return 0
		}
		return math.Min(slo.Target/m.LatencyP99, 1)
	case ThroughputSLO:
		want := math.Min(slo.Target, m.ArrivalRate)
		if want <= 0 {
			return 1
		}
		return math.Min(m.ProcessedRate/want, 1)
	default:
		return 1
	}
}

// Utilization returns CPU and memory usage over the limits of the desired
// pods, each in [0, 1].
func Utilization(m Metrics) (cpu, mem float64) {
	if m.Replicas <= 0 {
		return 0, 0
	}
	n := float64(m.Replicas)
	return clamp01(m.CPUUsage / (n * m.CPULimit)), clamp01(m.MemoryUsage / (n * m.MemoryLimit))
}

// Reward is r = α·SP·|R| + (1−α)·Σ_{i∈R} RU_i with R = {cpu, memory}
// (paper §2.2); it lies in [0, 2].
func Reward(alpha, sp, cpuUtil, memUtil float64) float64 {
	return alpha*sp*2 + (1-alpha)*(cpuUtil+memUtil)
}

// DefaultAlpha weighs SLO preservation and utilisation equally.
const DefaultAlpha = 0.5

// State vector indices.
const (
	StCPULimit    = iota // CPU limit / max CPU
	StMemoryLimit        // memory limit / max memory
	StReplicas           // replicas / max replicas
	StCPUUtil            // CPU usage / limits
	StMemoryUtil         // memory usage / limits
	StIOUtil             // disk rate / (replicas × IOCapacity)
	StNetUtil            // network rate / (replicas × NetCapacity)
	StSP                 // SLO preservation
	StLoadChange         // log2(arrival now / arrival before), clipped to ±3, divided by 3
	StateDim
)

// Capacities normalise the I/O and network utilisation features.
type Capacities struct {
	IO, Net float64 // bytes/s per pod
}

// DefaultCapacities: 100 MiB/s of disk and 1 Gbit/s of network per pod.
func DefaultCapacities() Capacities { return Capacities{IO: 100 * MiB, Net: 125e6} }

// ObservationSpace is the state box: every feature is normalised.
func ObservationSpace() Space {
	s := Space{
		Names: []string{"cpu_limit", "memory_limit", "replicas", "cpu_util", "memory_util", "io_util", "net_util", "slo_preservation", "load_change"},
		Low:   make([]float64, StateDim),
		High:  make([]float64, StateDim),
	}
	for i := range s.High {
		s.High[i] = 1
	}
	s.Low[StLoadChange] = -1
	return s
}

// State writes the normalised AWARE state of a step to dst (length
// StateDim) and returns it. prevArrival is the previous step's arrival
// rate. The authors' artifact does not normalise its state; this does.
func State(dst []float64, m Metrics, sp, prevArrival float64, b Bounds, c Capacities) []float64 {
	if len(dst) != StateDim {
		panic("gym: State needs a destination of length StateDim")
	}
	cpuU, memU := Utilization(m)
	n := math.Max(float64(m.Replicas), 1)
	dst[StCPULimit] = clamp01(m.CPULimit / b.MaxCPU)
	dst[StMemoryLimit] = clamp01(m.MemoryLimit / b.MaxMemory)
	dst[StReplicas] = clamp01(float64(m.Replicas) / float64(b.MaxReplicas))
	dst[StCPUUtil] = cpuU
	dst[StMemoryUtil] = memU
	dst[StIOUtil] = clamp01(m.IORate / (n * c.IO))
	dst[StNetUtil] = clamp01(m.NetRate / (n * c.Net))
	dst[StSP] = clamp01(sp)
	dst[StLoadChange] = LoadChange(m.ArrivalRate, prevArrival)
	return dst
}

// LoadChange is log2(now/before) clipped to ±3 and scaled to [−1, 1]; 0
// when both are idle.
func LoadChange(now, before float64) float64 {
	const eps = 1e-3
	r := math.Log2((now + eps) / (before + eps))
	return math.Max(-3, math.Min(3, r)) / 3
}

func clamp01(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	if x > 1 {
		return 1
	}
	return x
}
