package vpa

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender"
)

const mib = 1 << 20

// Mirrors ContainerState.addMemorySample: one peak per pod per 24 h
// interval, stamped at the interval's end (decay 2^(end/24h)), replaced while
// the interval lasts and kept once it is over.
func TestMemoryPeakPerInterval(t *testing.T) {
	b := recommender.Bounds{MinReplicas: 1, MaxReplicas: 10, MinCPU: 0.01, MaxCPU: 8, MinMemory: 1, MaxMemory: 1 << 36}
	v, err := New(b, time.Hour)
	require.NoError(t, err)
	feed := func(pods int, peak float64) {
		v.Observe(recommender.Observation{
			Current:       recommender.Allocation{Replicas: pods, CPU: 1, Memory: 1 << 30},
			ReadyReplicas: pods, CPUUsage: 0.5 * float64(pods), MemoryPeak: peak,
		})
	}
	end := func(v float64) float64 { return handEnd(v, firstMemBucket) }
	ps := [3]float64{0.5, 0.9, 0.95}

	feed(1, 300*mib) // t=0: the interval [0, 24h) starts
	feed(1, 200*mib) // lower: no change
	feed(1, 400*mib) // higher: replaces the peak
	assert.Equal(t, 24*time.Hour, v.win.end)
	assert.InDelta(t, 2.0, v.mem.total, 1e-12, "one peak of weight 1 decayed to 2^(24h/24h)")
	near(t, [3]float64{end(400 * mib), end(400 * mib), end(400 * mib)}, v.mem.percentiles(ps))

	feed(3, 100*mib) // more pods: the weight follows the pods seen in the interval
	assert.InDelta(t, 6.0, v.mem.total, 1e-12)

	for v.n < 24 {
		feed(1, 100*mib) // t up to 23h
	}
	feed(1, 100*mib) // t=24h: a new interval ending at 48h, weight 4
	assert.Equal(t, 48*time.Hour, v.win.end)
	assert.InDelta(t, 6.0+4.0, v.mem.total, 1e-12)
	// 100 MiB weighs 4 of 10 -> p50 needs 400 MiB; 90 % and 95 % too.
	near(t, [3]float64{end(400 * mib), end(400 * mib), end(400 * mib)}, v.mem.percentiles(ps))
	assert.InDelta(t, 4.0/10, v.mem.weight[v.mem.findBucket(100*mib)]/v.mem.total, 1e-12)

	// Skipping a whole interval lands in the interval holding t (upstream truncate + interval).
	v.advanceWindow(100 * time.Hour)
	assert.Equal(t, 120*time.Hour, v.win.end)
}

// The OOM sample takes the killed pods' weight from the usage peak.
func TestOOMSplitsWeight(t *testing.T) {
	b := recommender.Bounds{MinReplicas: 1, MaxReplicas: 10, MinCPU: 0.01, MaxCPU: 8, MinMemory: 1, MaxMemory: 1 << 36}
	v, err := New(b, time.Minute)
	require.NoError(t, err)
	o := recommender.Observation{
		Current:       recommender.Allocation{Replicas: 5, CPU: 1, Memory: 500 * mib},
		ReadyReplicas: 5, CPUUsage: 2, MemoryPeak: 300 * mib,
	}
	v.Observe(o)
	o.OOMKills = 2
	v.Observe(o)
	assert.Equal(t, [2]sample{{300 * mib, 3}, {600 * mib, 2}}, v.win.in)
	o.OOMKills = 10 // more kills than pods: all pods count as killed
	v.Observe(o)
	assert.Equal(t, [2]sample{{}, {600 * mib, 5}}, v.win.in)
	assert.InDelta(t, 5*v.mem.decayFactor(v.win.end), v.mem.total, 1e-9)
}
