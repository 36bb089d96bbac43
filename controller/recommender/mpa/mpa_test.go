package mpa_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
)

const (
	mi   = 1 << 20
	step = 30 * time.Second
	day  = int(24 * time.Hour / step)
)

// The AWARE artifact's bounds: replicas 1-20 (10 here), CPU 128-2048m, memory 256-3072Mi.
var bounds = recommender.Bounds{MinReplicas: 1, MaxReplicas: 10, MinCPU: 0.128, MaxCPU: 2.048, MinMemory: 256 * mi, MaxMemory: 3072 * mi}

// plant is a tiny deterministic workload: demand cores spread over the
// replicas, each pod throttled at its CPU limit, a fixed memory peak.
type plant struct {
	demand float64 // cores
	peak   float64 // bytes per pod
}

func (p plant) observe(a recommender.Allocation, t time.Duration) recommender.Observation {
	perPod := min(p.demand/float64(a.Replicas), a.CPU)
	return recommender.Observation{
		Time: t, Current: a, ReadyReplicas: a.Replicas,
		CPUUsage: perPod * float64(a.Replicas), MemoryUsage: p.peak * float64(a.Replicas), MemoryPeak: p.peak,
	}
}

// simulate closes the loop for n steps and returns the allocation after each.
func simulate(r recommender.Recommender, p plant, a recommender.Allocation, n int) []recommender.Allocation {
	out := make([]recommender.Allocation, n)
	for i := range out {
		a = r.Recommend(p.observe(a, time.Duration(i+1)*step))
		out[i] = a
	}
	return out
}

func newMPA(t testing.TB, opts ...mpa.Option) *mpa.MPA {
	t.Helper()
	m, err := mpa.New(bounds, step, append([]mpa.Option{mpa.WithHPA(hpa.WithTarget(0.7))}, opts...)...)
	require.NoError(t, err)
	return m
}

// The conflict rule with the loop held open (the same observation every
// step): CPU per pod moves only at MaxReplicas over target (up) or at
// MinReplicas under target (down).
func TestConflictRule(t *testing.T) {
	tests := []struct {
		name     string
		replicas int
		cpu      float64
		perPod   float64
		want     int // sign of the CPU change within 200 steps
	}{
		{"max replicas, over target: grow", 10, 0.5, 0.5, +1},
		{"min replicas, under target: shrink", 1, 2, 0.05, -1},
		{"between, starved: HPA acts, CPU stays", 5, 0.128, 0.128, 0},
		{"between, idle: HPA acts, CPU stays", 5, 2, 0.05, 0},
		{"max replicas, under target: CPU stays", 10, 2, 0.05, 0},
		{"min replicas, over target: CPU stays", 1, 0.5, 0.5, 0},
		{"max replicas, within tolerance: CPU stays", 10, 0.5, 0.36, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMPA(t)
			cur := recommender.Allocation{Replicas: tc.replicas, CPU: tc.cpu, Memory: 512 * mi}
			p := plant{demand: tc.perPod * float64(tc.replicas), peak: 300 * mi}
			got := 0
			for i := range 200 {
				a := m.Recommend(p.observe(cur, time.Duration(i+1)*step))
				switch {
				case a.CPU > cur.CPU:
					got = +1
				case a.CPU < cur.CPU:
					got = -1
				}
				if got != 0 {
					break
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// The memory limit follows the VPA whatever the replicas do.
func TestMemoryOwnedByVPA(t *testing.T) {
	m := newMPA(t)
	cur := recommender.Allocation{Replicas: 5, CPU: 0.5, Memory: 256 * mi}
	p := plant{demand: 2, peak: 1024 * mi} // the peak is above the 256Mi limit: under-provisioned
	a := cur
	for i := 0; i < 20 && a.Memory == cur.Memory; i++ { // until the lower bound is confident enough
		a = m.Recommend(p.observe(a, time.Duration(i+1)*step))
	}
	assert.Greater(t, a.Memory, 1024.0*mi)
	rec, ok := m.VPA().Recommendation()
	require.True(t, ok)
	assert.Equal(t, rec.Target.Memory, a.Memory)
	assert.Equal(t, 0.5, a.CPU)
}

// On steady loads the closed loop settles and stays: no oscillation between
// horizontal and vertical scaling, whichever bound binds.
func TestNoOscillationOnSteadyLoad(t *testing.T) {
	tests := []struct {
		name    string
		demand  float64
		start   recommender.Allocation
		final   func(t *testing.T, a recommender.Allocation)
		changes int // at most this many allocation changes in the day
	}{
		{"horizontal only", 3, recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 * mi},
			func(t *testing.T, a recommender.Allocation) {
				assert.Equal(t, 0.5, a.CPU, "CPU per pod untouched")
				assert.InDelta(t, 3/0.5/0.7, float64(a.Replicas), 1.5)
			}, 8},
		{"beyond max replicas: CPU per pod grows", 12, recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 * mi},
			func(t *testing.T, a recommender.Allocation) {
				assert.Equal(t, 10, a.Replicas)
				assert.GreaterOrEqual(t, a.CPU, 1.2, "per-pod CPU covers the demand")
				assert.LessOrEqual(t, a.CPU, 1.2*1.25)
			}, 20},
		{"idle at min replicas: CPU per pod shrinks", 0.02, recommender.Allocation{Replicas: 1, CPU: 1, Memory: 512 * mi},
			func(t *testing.T, a recommender.Allocation) {
				assert.Equal(t, 1, a.Replicas)
				assert.Equal(t, bounds.MinCPU, a.CPU)
			}, 4},
		{"over max CPU and replicas", 40, recommender.Allocation{Replicas: 4, CPU: 1, Memory: 512 * mi},
			func(t *testing.T, a recommender.Allocation) {
				assert.Equal(t, recommender.Allocation{Replicas: 10, CPU: bounds.MaxCPU, Memory: a.Memory}, a)
			}, 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMPA(t)
			traj := simulate(m, plant{demand: tc.demand, peak: 300 * mi}, tc.start, day)
			prev, changes, last := tc.start, 0, -1
			for i, a := range traj {
				if a != prev {
					changes++
					last = i
				}
				prev = a
			}
			assert.LessOrEqual(t, changes, tc.changes, "allocation changes in a day")
			// Memory may be trimmed once when the pods turn 12 h old; nothing moves after.
			assert.Less(t, last, day*3/4, "settled: last change at step %d", last)
			tc.final(t, traj[len(traj)-1])
			for i := 1; i < len(traj); i++ {
				if traj[i].CPU != traj[i-1].CPU {
					require.Equal(t, traj[i].CPU > traj[i-1].CPU, traj[len(traj)-1].CPU > tc.start.CPU, "CPU moves one way only")
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	m := newMPA(t, mpa.WithVPA(vpa.WithSafetyMargin(0.2)))
	assert.Equal(t, "hpa+vpa", m.Name())
	assert.NotNil(t, m.HPA())
	assert.NotNil(t, m.VPA())

	_, err := mpa.New(bounds, step, mpa.WithHPA(hpa.WithTarget(-1)), mpa.WithVPA(vpa.WithSafetyMargin(-1)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mpa: hpa:")
	assert.Contains(t, err.Error(), "vpa: safety margin -1")
	_, err = mpa.New(recommender.Bounds{}, step)
	assert.ErrorContains(t, err, "minReplicas 0")
}

func TestRecommendDoesNotAllocate(t *testing.T) {
	m := newMPA(t)
	a := recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 * mi}
	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		i++
		p := plant{demand: 1 + float64(i%300)/30, peak: float64(200+i%41) * mi}
		a = m.Recommend(p.observe(a, time.Duration(i)*step))
	})
	assert.Zero(t, allocs)
}

func BenchmarkRecommend(b *testing.B) {
	for _, bc := range []struct {
		name   string
		demand func(i int) float64
	}{
		{"steady", func(int) float64 { return 3 }},
		{"beyond-max", func(int) float64 { return 12 }},
		{"varying", func(i int) float64 { return 1 + float64(i%600)/40 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := newMPA(b)
			a := recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 * mi}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				a = m.Recommend(plant{demand: bc.demand(i), peak: 300 * mi}.observe(a, time.Duration(i)*step))
			}
		})
	}
}
