package gym

import "math"

// Normalized actions: continuous agents act in [−1, 1]^ActDim, and a
// Mapping turns that into the allocation the environment is stepped with:
// relative to the current allocation (the default) or linearly onto the
// action space (Denormalize). Discrete agents (the authors' artifact's PPO)
// instead pick one of seven moves relative to the current allocation.

// Denormalize maps a ∈ [−1, 1]^Dim (clipped) linearly onto s and writes the
// result to dst, which is returned.
func Denormalize(dst, a []float64, s Space) []float64 {
	if len(dst) != s.Dim() || len(a) != s.Dim() {
		panic("gym: Denormalize length mismatch")
	}
	for i, v := range a {
		if math.IsNaN(v) {
			v = -1
		}
		v = math.Max(-1, math.Min(1, v))
		dst[i] = s.Low[i] + (v+1)/2*(s.High[i]-s.Low[i])
	}
	return dst
}

// Normalize is the inverse of Denormalize: it maps x in s onto [−1, 1].
func Normalize(dst, x []float64, s Space) []float64 {
	if len(dst) != s.Dim() || len(x) != s.Dim() {
		panic("gym: Normalize length mismatch")
	}
	for i, v := range x {
		w := s.High[i] - s.Low[i]
		if w == 0 {
			dst[i] = 0
			continue
		}
		dst[i] = math.Max(-1, math.Min(1, 2*(v-s.Low[i])/w-1))
	}
	return dst
}

// Move is one of the artifact's seven discrete actions.
type Move int

// The seven moves: no-op, ±1 replica, ±128 millicores, ±128 MiB.
const (
	Noop Move = iota
	AddReplica
	RemoveReplica
	AddCPU
	RemoveCPU
	AddMemory
	RemoveMemory
	Moves // the number of moves
)

// Move steps of the artifact.
const (
	CPUStep    = 0.128    // cores
	MemoryStep = 32 * MiB // bytes (the artifact's 128 MiB is four times the idle working set)
)

// Allocation is a point of the action space as named values.
type Allocation struct {
	Replicas int
	CPU      float64 // cores per pod
	Memory   float64 // bytes per pod
}

// Vector writes a as an action vector to dst and returns it.
func (a Allocation) Vector(dst []float64) []float64 {
	dst[ActReplicas], dst[ActCPU], dst[ActMemory] = float64(a.Replicas), a.CPU, a.Memory
	return dst
}

// Apply returns the allocation after move m from cur and whether the move
// was legal: a move that would leave the bounds (or an unknown move) is
// refused, the allocation stays, and the environment should charge
// IllegalPenalty. (The artifact's "penalty" added +1 to the reward.)
func Apply(m Move, cur Allocation, b Bounds) (Allocation, bool) {
	next := cur
	switch m {
	case Noop:
		return cur, true
	case AddReplica:
		next.Replicas++
	case RemoveReplica:
		next.Replicas--
	case AddCPU:
		next.CPU += CPUStep
	case RemoveCPU:
		next.CPU -= CPUStep
	case AddMemory:
		next.Memory += MemoryStep
	case RemoveMemory:
		next.Memory -= MemoryStep
	default:
		return cur, false
	}
	const eps = 1e-9
	if next.Replicas < b.MinReplicas || next.Replicas > b.MaxReplicas ||
		next.CPU < b.MinCPU-eps || next.CPU > b.MaxCPU+eps ||
		next.Memory < b.MinMemory-eps || next.Memory > b.MaxMemory+eps {
		return cur, false
	}
	return next, true
}

// IllegalPenalty is subtracted from the reward of a step whose action was
// refused: a quarter of the best possible step reward.
const IllegalPenalty = 0.5
