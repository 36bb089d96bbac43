package sim

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/gym"
)

// TestSteadyStateIsTheSimulator checks SteadyState against the simulator it
// summarises: at a constant load, once the cold start has passed, a step
// without noise reports the stationary latency, utilisation and working set.
func TestSteadyStateIsTheSimulator(t *testing.T) {
	p := profile(t)
	tests := []struct {
		name  string
		rate  float64
		alloc Allocation
		conc  int
	}{
		{"light, one core", 20, Allocation{2, 1, 1024 * gym.MiB}, 0},
		{"busy, two cores", 180, Allocation{3, 2, 1024 * gym.MiB}, 8},
		{"throttled quota", 6, Allocation{1, 0.3, 1024 * gym.MiB}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := testApp(tt.rate, tt.alloc)
			app.Concurrency = tt.conc
			_, ms := run(t, app, 4)
			got := ms[len(ms)-1]
			m, err := NewModel(p, app.Chain, app.Speed, DefaultOverheads())
			require.NoError(t, err)
			st := SteadyState(m, tt.alloc, tt.rate, tt.conc, 30)
			require.True(t, st.Stable())
			assert.InDelta(t, st.LatencyP99, got.LatencyP99, 1e-9*st.LatencyP99)
			assert.InDelta(t, st.LatencyP95, got.LatencyP95, 1e-9*st.LatencyP95)
			assert.InDelta(t, st.LatencyP50, got.LatencyP50, 1e-9*st.LatencyP50)
			cpu, _ := gym.Utilization(got)
			assert.InDelta(t, st.CPUUtil, cpu, 1e-9)
			assert.InDelta(t, st.Memory, got.MemoryUsage/float64(tt.alloc.Replicas), 1)
			assert.InDelta(t, st.MemoryPeak, got.MemoryPeak, 1)
		})
	}
}

func TestSteadyState(t *testing.T) {
	p := profile(t)
	app := testApp(0, Allocation{})
	m, err := NewModel(p, app.Chain, 1, DefaultOverheads())
	require.NoError(t, err)
	one := Allocation{Replicas: 1, CPU: 1}
	capacity := 1 / m.CPU

	// Latency grows with load, from the isolated service time.
	prev := SteadyState(m, one, 0, 4, 30)
	assert.InDelta(t, m.P99, prev.LatencyP99, 1e-12, "idle: the isolated p99")
	for _, u := range []float64{0.2, 0.5, 0.8, 0.95} {
		st := SteadyState(m, one, u*capacity, 4, 30)
		assert.Greater(t, st.LatencyP99, prev.LatencyP99, "at %g", u)
		assert.InDelta(t, u, st.CPUUtil, 0.01)
		prev = st
	}
	// More replicas share the load.
	assert.Less(t, SteadyState(m, Allocation{Replicas: 2, CPU: 1}, 0.8*capacity, 4, 30).LatencyP99, prev.LatencyP99)
	// A quota below the service time's CPU throttles even a lone request.
	assert.Greater(t, SteadyState(m, Allocation{Replicas: 1, CPU: m.CPU / 4}, 0, 4, 30).LatencyP99, m.P99+2*cfsPeriod)

	// Beyond capacity, or without pods, there is no steady state.
	for _, st := range []Steady{
		SteadyState(m, one, capacity, 4, 30),
		SteadyState(m, Allocation{Replicas: 0, CPU: 1}, 1, 4, 30),
		SteadyState(m, Allocation{Replicas: 1, CPU: 0}, 1, 4, 30),
	} {
		assert.False(t, st.Stable())
		assert.True(t, math.IsInf(st.LatencyP95, 1))
	}

	assert.Equal(t, capacity, m.Capacity(1, 0), "unbounded: the cores bound it")
	assert.Equal(t, capacity, m.Capacity(1, 1000))

	// Few slots cap what a pod of mostly-waiting requests completes.
	sleepy := testApp(0, Allocation{})
	sleepy.Chain[0].Name, sleepy.Chain[0].Size = "sleep", 400
	ms, err := NewModel(p, sleepy.Chain, 1, DefaultOverheads())
	require.NoError(t, err)
	assert.True(t, SteadyState(ms, one, 20, 0, 30).Stable(), "unbounded: the core is far from busy")
	assert.False(t, SteadyState(ms, one, 20, 4, 30).Stable(), "4 slots of 0.4 s complete at most 10 requests/s")
	assert.InDelta(t, 4/ms.P50, ms.Capacity(1, 4), 1e-9)
}

func TestWorkingSetWithBoundedConcurrency(t *testing.T) {
	m := Model{BaseMemory: 20 * gym.MiB, MemoryPerRequest: 2 * gym.MiB}
	tests := []struct {
		n    float64
		conc int
		want float64
	}{
		{0, 4, 20 * gym.MiB},
		{1, 4, 20 * gym.MiB},
		{4, 4, 26 * gym.MiB},
		{1004, 4, 26*gym.MiB + 1000*queuedBytes}, // the queue holds little
		{1004, 0, 20*gym.MiB + 1003*2*gym.MiB},   // unbounded: all run
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, m.WorkingSet(tt.n, tt.conc), 1e-6, "%g requests, %d slots", tt.n, tt.conc)
		if tt.n > 1 {
			assert.InDelta(t, tt.n, m.requestsAt(m.WorkingSet(tt.n, tt.conc), slots(tt.conc)), 1e-6, "requestsAt inverts it")
		}
	}
	assert.Zero(t, m.requestsAt(10*gym.MiB, 4), "an idle pod does not fit")
}

// TestOverloadQueueHoldsLittleMemory: a pod far beyond its capacity with a
// bounded server queues requests at a few KiB each instead of running them
// all, so its working set stays near the slots' and a generous limit holds.
func TestOverloadQueueHoldsLittleMemory(t *testing.T) {
	app := testApp(400, Allocation{1, 1, 256 * gym.MiB})
	app.Concurrency = 4
	_, bounded := run(t, app, 6)
	app.Concurrency = 0
	_, unbounded := run(t, app, 6)
	last := len(bounded) - 1
	assert.Positive(t, bounded[last].DroppedRate, "overloaded")
	assert.Zero(t, bounded[last].OOMKills)
	m, err := NewModel(profile(t), app.Chain, 1, DefaultOverheads())
	require.NoError(t, err)
	assert.Less(t, bounded[last].MemoryPeak, m.WorkingSet(2004, 4), "the slots' working set and a queue of ~1000 (10 s of capacity) at 16 KiB")
	var kills int
	for _, m := range unbounded {
		kills += m.OOMKills
	}
	assert.Positive(t, kills, "an unbounded server holds every request's working set and is killed")
}
