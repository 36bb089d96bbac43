package gym

import (
	"fmt"
	"math"
)

// Mapping says how an agent's continuous action a ∈ [−1, 1]^ActDim becomes
// the allocation [replicas, CPU cores, memory bytes] of the next step.
type Mapping int

const (
	// Relative scales the allocation in effect when the action is taken
	// (what the state's limit and replica features show, Current):
	// x' = x·2^(a·RelativeRange), replicas rounded, then
	// clipped to the bounds. a = 0 keeps what runs, so an untrained agent
	// (whose outputs sit near 0) holds the allocation it found, and
	// exploration noise is proportional to it: ±0.2 is ±15 % of two replicas
	// or of twenty. The zero Mapping and the default.
	Relative Mapping = iota
	// Absolute maps a linearly onto the bounds' box (Denormalize), as the
	// paper's and FIRM's DDPG agents do: a = 0 is the box's centre (10
	// replicas of 1.1 cores and 1.5 GiB with DefaultBounds) whatever the
	// application needs.
	Absolute
)

// RelativeRange is the log2 of the largest factor one Relative step changes
// each part of an allocation by: at most double or halve it, as the
// Kubernetes HPA's default scale-up policy (100 % per 15 s period) and the
// VPA updater's tolerance band work in ratios rather than steps.
const RelativeRange = 1.0

// Mappings lists the mappings in the order of their values.
var Mappings = []Mapping{Relative, Absolute}

func (m Mapping) String() string {
	switch m {
	case Relative:
		return "relative"
	case Absolute:
		return "absolute"
	}
	return fmt.Sprintf("Mapping(%d)", int(m))
}

// ParseMapping is String's inverse.
func ParseMapping(s string) (Mapping, error) {
	for _, m := range Mappings {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("gym: unknown action mapping %q (want relative or absolute)", s)
}

// Current is the allocation a state describes: its limit and replica
// features scaled back by the bounds, clipped to them. state may be longer
// than StateDim (an embedding or forecast appended).
func Current(state []float64, b Bounds) Allocation {
	if len(state) < StateDim {
		panic("gym: Current needs a state of at least StateDim values")
	}
	return Allocation{
		Replicas: int(math.Round(state[StReplicas] * float64(b.MaxReplicas))),
		CPU:      state[StCPULimit] * b.MaxCPU,
		Memory:   state[StMemoryLimit] * b.MaxMemory,
	}.clip(b)
}

// Allocation is the allocation in effect during m's step.
func (m Metrics) Allocation() Allocation {
	return Allocation{Replicas: m.Replicas, CPU: m.CPULimit, Memory: m.MemoryLimit}
}

// clip is a within b (NaN parts at their low bound).
func (a Allocation) clip(b Bounds) Allocation {
	lo := func(x, min, max float64) float64 {
		if math.IsNaN(x) {
			return min
		}
		return clip(x, min, max)
	}
	return Allocation{
		Replicas: int(clip(float64(a.Replicas), float64(b.MinReplicas), float64(b.MaxReplicas))),
		CPU:      lo(a.CPU, b.MinCPU, b.MaxCPU),
		Memory:   lo(a.Memory, b.MinMemory, b.MaxMemory),
	}
}

// Target writes to dst the allocation that action a asks for when taken
// while cur runs, within b, and returns it. Components of a are clipped to
// [−1, 1]; a NaN one means the box's low end (Absolute) or no change
// (Relative).
func (m Mapping) Target(dst, a []float64, cur Allocation, b Bounds) []float64 {
	if len(dst) != ActDim || len(a) != ActDim {
		panic("gym: Mapping.Target needs actions of length ActDim")
	}
	if m == Absolute {
		return Denormalize(dst, a, ActionSpace(b))
	}
	cur = cur.clip(b)
	f := func(i int) float64 {
		v := a[i]
		if math.IsNaN(v) {
			v = 0
		}
		return math.Exp2(clip(v, -1, 1) * RelativeRange)
	}
	dst[ActReplicas] = clip(math.Round(math.Max(float64(cur.Replicas), 1)*f(ActReplicas)), float64(b.MinReplicas), float64(b.MaxReplicas))
	dst[ActCPU] = clip(cur.CPU*f(ActCPU), b.MinCPU, b.MaxCPU)
	dst[ActMemory] = clip(cur.Memory*f(ActMemory), b.MinMemory, b.MaxMemory)
	return dst
}

// Encode is Target's inverse: it writes to dst the action that asks for
// allocation x while cur runs (clipped to [−1, 1]: a Relative step cannot
// more than double or halve), and returns it. It turns the allocations
// another autoscaler set into an agent's actions.
func (m Mapping) Encode(dst, x []float64, cur Allocation, b Bounds) []float64 {
	if len(dst) != ActDim || len(x) != ActDim {
		panic("gym: Mapping.Encode needs allocations of length ActDim")
	}
	if m == Absolute {
		return Normalize(dst, x, ActionSpace(b))
	}
	cur = cur.clip(b)
	ratio := func(next, now float64) float64 {
		if !(next > 0) || !(now > 0) {
			return -1
		}
		return clip(math.Log2(next/now)/RelativeRange, -1, 1)
	}
	dst[ActReplicas] = ratio(x[ActReplicas], math.Max(float64(cur.Replicas), 1))
	dst[ActCPU] = ratio(x[ActCPU], cur.CPU)
	dst[ActMemory] = ratio(x[ActMemory], cur.Memory)
	return dst
}

func clip(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }
