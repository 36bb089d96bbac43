package transfer

import (
	"fmt"
	"math"

	"github.com/aware-autoscaler/aware/gym"
)

// Perf is what a Table holds for one allocation: exponential moving
// averages of what the steps run there measured.
type Perf struct {
	SP               float64 // SLO preservation
	CPUUtil, MemUtil float64 // usage over limits
	Steps            int     // steps recorded
}

// cell is a discretised allocation: replicas, and the CPU and memory
// limits' buckets.
type cell struct{ replicas, cpu, mem int }

// Table maps allocations, discretised into buckets of the action bounds,
// to the performance measured at them.
type Table struct {
	b       gym.Bounds
	buckets int
	decay   float64
	cells   map[cell]Perf
}

// NewTable returns an empty table over bounds b with buckets CPU and
// memory buckets each; decay ∈ (0, 1] weighs a new step in the moving
// averages (1 keeps the newest only).
func NewTable(b gym.Bounds, buckets int, decay float64) (*Table, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if buckets < 1 {
		return nil, fmt.Errorf("transfer: %d buckets: must be at least 1", buckets)
	}
	if !(decay > 0 && decay <= 1) {
		return nil, fmt.Errorf("transfer: decay %g outside (0, 1]", decay)
	}
	return &Table{b: b, buckets: buckets, decay: decay, cells: map[cell]Perf{}}, nil
}

// bucket is the bucket of x within [lo, hi].
func (t *Table) bucket(x, lo, hi float64) int {
	if !(hi > lo) {
		return 0
	}
	k := int(math.Floor((x - lo) / (hi - lo) * float64(t.buckets)))
	return min(max(k, 0), t.buckets-1)
}

func (t *Table) cellOf(a gym.Allocation) cell {
	return cell{
		replicas: min(max(a.Replicas, t.b.MinReplicas), t.b.MaxReplicas),
		cpu:      t.bucket(a.CPU, t.b.MinCPU, t.b.MaxCPU),
		mem:      t.bucket(a.Memory, t.b.MinMemory, t.b.MaxMemory),
	}
}

// Record adds a step measured at allocation a. Non-finite figures are
// refused: one NaN would spoil the cell for good.
func (t *Table) Record(a gym.Allocation, sp, cpuUtil, memUtil float64) error {
	for _, v := range []float64{sp, cpuUtil, memUtil} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("transfer: table record at %+v: %v is not finite", a, v)
		}
	}
	c := t.cellOf(a)
	p, ok := t.cells[c]
	if !ok {
		t.cells[c] = Perf{SP: sp, CPUUtil: cpuUtil, MemUtil: memUtil, Steps: 1}
		return nil
	}
	d := t.decay
	p.SP += d * (sp - p.SP)
	p.CPUUtil += d * (cpuUtil - p.CPUUtil)
	p.MemUtil += d * (memUtil - p.MemUtil)
	p.Steps++
	t.cells[c] = p
	return nil
}

// Lookup returns the performance recorded at a's cell.
func (t *Table) Lookup(a gym.Allocation) (Perf, bool) {
	p, ok := t.cells[t.cellOf(a)]
	return p, ok
}

// Len is the number of cells recorded.
func (t *Table) Len() int { return len(t.cells) }

// neighbours are the six cells one step away in replicas, CPU and memory.
var neighbours = [6]cell{{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}}

// FeatureDim is the number of features Features writes.
const FeatureDim = 2 + 2*(1+len(neighbours))

// Features writes the table's view of allocation a to dst (length
// FeatureDim) and returns it: the CPU and memory utilisation recorded at
// a's cell, then for a's cell and each neighbour (replicas −1, +1, CPU
// −1, +1, memory −1, +1 bucket) the SLO preservation recorded and 1 if
// anything was recorded there (0 and 0 if not).
func (t *Table) Features(dst []float64, a gym.Allocation) []float64 {
	if len(dst) != FeatureDim {
		panic("transfer: Features needs a destination of length FeatureDim")
	}
	clear(dst)
	c := t.cellOf(a)
	if p, ok := t.cells[c]; ok {
		dst[0], dst[1] = p.CPUUtil, p.MemUtil
	}
	for i, d := range append([]cell{{}}, neighbours[:]...) {
		if p, ok := t.cells[cell{c.replicas + d.replicas, c.cpu + d.cpu, c.mem + d.mem}]; ok {
			dst[2+2*i], dst[3+2*i] = p.SP, 1
		}
	}
	return dst
}
