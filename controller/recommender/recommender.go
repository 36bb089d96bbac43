package recommender

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Allocation is what a MultidimPodAutoscaler sets for a workload.
type Allocation struct {
	Replicas int
	CPU      float64 // CPU limit (= request) per pod, cores
	Memory   float64 // memory limit (= request) per pod, bytes
}

// String formats the allocation as "3×(500m, 256Mi)".
func (a Allocation) String() string {
	return fmt.Sprintf("%d×(%.0fm, %.0fMi)", a.Replicas, a.CPU*1000, a.Memory/(1<<20))
}

// Bounds are the constraints of the MPA (minReplicas..maxReplicas,
// resourcePolicy min/maxAllowed).
type Bounds struct {
	MinReplicas, MaxReplicas int
	MinCPU, MaxCPU           float64 // cores per pod
	MinMemory, MaxMemory     float64 // bytes per pod
}

// Clamp brings every field of a into the bounds.
func (b Bounds) Clamp(a Allocation) Allocation {
	a.Replicas = min(max(a.Replicas, b.MinReplicas), b.MaxReplicas)
	a.CPU = min(max(a.CPU, b.MinCPU), b.MaxCPU)
	a.Memory = min(max(a.Memory, b.MinMemory), b.MaxMemory)
	return a
}

// WithMinCPU is b with its CPU floor raised to cpu cores (an MPA's
// per-application minAllowed), at most MaxCPU; a lower cpu leaves b as is.
func (b Bounds) WithMinCPU(cpu float64) Bounds {
	b.MinCPU = min(max(b.MinCPU, cpu), b.MaxCPU)
	return b
}

// Validate reports whether the bounds are usable: 1 <= MinReplicas <=
// MaxReplicas, 0 <= MinCPU <= MaxCPU with MaxCPU > 0, and the same for memory.
func (b Bounds) Validate() error {
	var errs []error
	if b.MinReplicas < 1 {
		errs = append(errs, fmt.Errorf("minReplicas %d must be at least 1", b.MinReplicas))
	}
	if b.MaxReplicas < b.MinReplicas {
		errs = append(errs, fmt.Errorf("maxReplicas %d is below minReplicas %d", b.MaxReplicas, b.MinReplicas))
	}
	errs = append(errs, checkRange("cpu", "cores", b.MinCPU, b.MaxCPU), checkRange("memory", "bytes", b.MinMemory, b.MaxMemory))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("recommender bounds: %w", err)
	}
	return nil
}

func checkRange(name, unit string, lo, hi float64) error {
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0):
		return fmt.Errorf("%s bounds [%g, %g] %s must be finite", name, lo, hi, unit)
	case lo < 0:
		return fmt.Errorf("%s minAllowed %g %s is negative", name, lo, unit)
	case hi <= 0:
		return fmt.Errorf("%s maxAllowed %g %s must be positive", name, hi, unit)
	case hi < lo:
		return fmt.Errorf("%s maxAllowed %g is below minAllowed %g %s", name, hi, lo, unit)
	}
	return nil
}

// Observation is one step's measurements of one workload, as Prometheus
// would report them.
type Observation struct {
	Time          time.Duration // end of this step since the start of the run
	Current       Allocation    // allocation in effect during the step
	ReadyReplicas int           // pods ready at the end of the step
	CPUUsage      float64       // cores, summed over pods, mean over the step
	MemoryUsage   float64       // bytes, summed over pods, mean over the step
	MemoryPeak    float64       // bytes, the largest per-pod working set seen during the step
	OOMKills      int           // pods OOM-killed during the step
	ArrivalRate   float64       // requests/s offered
	ProcessedRate float64       // requests/s completed
	LatencyP99    float64       // seconds
}

// Recommender turns observations into the allocation to apply next. It is
// stateful (histories) and not safe for concurrent use; one per workload.
type Recommender interface {
	Name() string
	Recommend(obs Observation) Allocation
}

// ValidateStep checks the time between two Recommend calls given to a
// recommender constructor.
func ValidateStep(step time.Duration) error {
	if step <= 0 {
		return fmt.Errorf("recommender step %v must be positive", step)
	}
	return nil
}
