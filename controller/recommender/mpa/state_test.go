package mpa_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
)

// noisy is a seeded workload whose demand and memory peak wander and whose
// pods are OOM-killed now and then, so that every part of the state (both
// histograms, the memory interval, OOM bookkeeping, HPA windows and scale
// events) is exercised.
type noisy struct {
	rnd *rand.Rand
}

func (p noisy) observe(a recommender.Allocation, t time.Duration) recommender.Observation {
	demand := 0.3 + 3*p.rnd.Float64()
	peak := (200 + 600*p.rnd.Float64()) * mi
	ready := a.Replicas
	if p.rnd.IntN(10) == 0 {
		ready = max(a.Replicas-1, 0)
	}
	o := recommender.Observation{Time: t, Current: a, ReadyReplicas: ready, MemoryPeak: peak}
	if ready > 0 {
		o.CPUUsage = min(demand, a.CPU*float64(ready))
	}
	if peak > a.Memory {
		o.OOMKills = 1 + p.rnd.IntN(a.Replicas)
	}
	return o
}

// TestStateRestoresTheSameRecommendations: an MPA restored from a JSON
// checkpoint of another (a restarted controller) recommends, step after
// step, exactly what the other does, and reports the same VPA
// recommendation and HPA status; this holds with the default 24 h
// half-life and with a half-life short enough that the histograms' reference
// time moves during the run.
func TestStateRestoresTheSameRecommendations(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []mpa.Option
	}{
		{"default", nil},
		{"short half-life", []mpa.Option{mpa.WithVPA(vpa.WithHalfLife(time.Minute), vpa.WithMemoryAggregationInterval(5*time.Minute))}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			orig := newMPA(t, tt.opts...)
			p := noisy{rand.New(rand.NewPCG(1, 2))}
			a := recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 * mi}
			steps := 0
			next := func(m *mpa.MPA, obs recommender.Observation) recommender.Allocation {
				return m.Recommend(obs)
			}
			for _, checkpointAt := range []int{1, 7, 240, day} {
				for ; steps < checkpointAt; steps++ {
					a = next(orig, p.observe(a, time.Duration(steps+1)*step))
				}
				data, err := json.Marshal(orig.State())
				require.NoError(t, err)
				var st mpa.State
				require.NoError(t, json.Unmarshal(data, &st))
				restored := newMPA(t, tt.opts...)
				require.NoError(t, restored.Restore(st))
				again, err := json.Marshal(restored.State())
				require.NoError(t, err)
				require.JSONEq(t, string(data), string(again), "restore then State gives the checkpoint back")

				// Both go on with the same observations for a while.
				ar, q := a, noisy{rand.New(rand.NewPCG(uint64(checkpointAt), 3))}
				for i := range 300 {
					obs := q.observe(ar, time.Duration(steps+i+1)*step)
					want, got := orig.Recommend(obs), restored.Recommend(obs)
					require.Equal(t, want, got, "checkpoint at step %d, %d steps after", checkpointAt, i+1)
					require.Equal(t, orig.HPA().Status(), restored.HPA().Status())
					wr, wok := orig.VPA().Recommendation()
					gr, gok := restored.VPA().Recommendation()
					require.Equal(t, wok, gok)
					require.Equal(t, wr, gr)
					ar = want
				}
				// orig went on past the checkpoint: start the next round
				// from where it is now.
				steps += 300
				a = ar
			}
		})
	}
}

// TestRestoreRefusesAndKeepsState: a state of another step, or a corrupt
// one, is refused with the field named, and the MPA is left as it was.
func TestRestoreRefusesAndKeepsState(t *testing.T) {
	m := newMPA(t)
	simulate(m, plant{demand: 2, peak: 300 * mi}, recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 * mi}, 100)
	before, err := json.Marshal(m.State())
	require.NoError(t, err)
	for _, tt := range []struct {
		name    string
		corrupt func(*mpa.State)
		err     string
	}{
		{"hpa step", func(s *mpa.State) { s.HPA.Step = time.Minute }, "mpa: hpa: restore: step 1m0s, this HPA's is 30s"},
		{"vpa step", func(s *mpa.State) { s.VPA.Step = time.Minute }, "mpa: vpa: restore: step 1m0s, this VPA's is 30s"},
		{"vpa weight", func(s *mpa.State) { s.VPA.CPU.Weights[3] = -1 }, "cpu histogram: weight of bucket 3 is -1"},
		{"vpa layout", func(s *mpa.State) { s.VPA.Memory.Weights = s.VPA.Memory.Weights[:10] }, "memory histogram of 10 buckets"},
		{"hpa records", func(s *mpa.State) { s.HPA.Records[0].Call = s.HPA.Calls + 5 }, "records[0]: call"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var st mpa.State
			require.NoError(t, json.Unmarshal(before, &st))
			tt.corrupt(&st)
			assert.ErrorContains(t, m.Restore(st), tt.err)
			after, err := json.Marshal(m.State())
			require.NoError(t, err)
			assert.JSONEq(t, string(before), string(after), "a refused state changes nothing")
		})
	}
}

// FuzzRestore: a checkpoint read back from anywhere (a damaged object, an
// edited one) is refused or, once accepted, drives an MPA that neither
// panics nor recommends outside its bounds.
func FuzzRestore(f *testing.F) {
	m := newMPA(f)
	simulate(m, plant{demand: 2, peak: 300 * mi}, recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 * mi}, 50)
	good, err := json.Marshal(m.State())
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte(`{"hpa":{"step":30000000000,"calls":3,"records":[{"call":-1}]},"vpa":{}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var st mpa.State
		if json.Unmarshal(data, &st) != nil {
			return
		}
		r := newMPA(t)
		if r.Restore(st) != nil {
			return
		}
		a := recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 * mi}
		p := noisy{rand.New(rand.NewPCG(1, 1))}
		for i := range 20 {
			a = r.Recommend(p.observe(a, time.Duration(i+1)*step))
			require.Equal(t, bounds.Clamp(a), a, "step %d: %v outside the bounds", i, a)
		}
	})
}
