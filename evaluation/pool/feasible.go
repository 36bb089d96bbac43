package pool

import (
	"fmt"
	"math"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Feasibility is whether some allocation within the bounds meets an
// application's SLO at a load, in the simulator's stationary model.
type Feasibility struct {
	// Load is the arrival rate checked, requests/s.
	Load float64
	// Best is the feasible allocation of fewest CPU cores in total (then
	// fewest replicas); zero when none is.
	Best sim.Allocation
	// P99 is the p99 latency at Best, seconds.
	P99 float64
	OK  bool
}

// Feasible checks app at load requests/s: every replica count of b and
// every CPU limit from b.MinCPU in steps of gym.CPUStep up to b.MaxCPU, all
// replicas ready, against the SLO as gym.SLOPreservation scores it (a
// latency SLO's p99 bound; a throughput SLO's rate, met when the pods keep
// up), with the pod's peak working set within b.MaxMemory. It is pure: the
// model's stationary behaviour (sim.SteadyState) at the simulator's step
// dt, without noise.
func Feasible(prof *calibration.Profile, app sim.App, load float64, b gym.Bounds, dt float64, ov sim.Overheads) (Feasibility, error) {
	m, err := sim.NewModel(prof, app.Chain, app.Speed, ov)
	if err != nil {
		return Feasibility{}, fmt.Errorf("pool: feasibility of %s: %w", app.Name, err)
	}
	f := Feasibility{Load: load}
	cores := math.Inf(1)
	for cpu := b.MinCPU; cpu <= b.MaxCPU+1e-9; cpu += gym.CPUStep {
		for r := b.MinReplicas; r <= b.MaxReplicas; r++ {
			if total := float64(r) * cpu; total >= cores {
				break
			}
			st := sim.SteadyState(m, sim.Allocation{Replicas: r, CPU: cpu, Memory: b.MaxMemory}, load, app.Concurrency, dt)
			if !st.Stable() || st.MemoryPeak > b.MaxMemory {
				continue
			}
			if app.SLO.Kind == gym.LatencySLO && st.LatencyP99 > app.SLO.Target {
				continue
			}
			cores = float64(r) * cpu
			f.Best, f.P99, f.OK = sim.Allocation{Replicas: r, CPU: cpu, Memory: b.MaxMemory}, st.LatencyP99, true
			break
		}
	}
	return f, nil
}
