package transfer

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/forecast"
	"github.com/aware-autoscaler/aware/gym"
)

func bounds() gym.Bounds {
	return gym.Bounds{MinReplicas: 1, MaxReplicas: 10, MinCPU: 0.5, MaxCPU: 2.5, MinMemory: 64 * gym.MiB, MaxMemory: 1088 * gym.MiB}
}

func TestTable(t *testing.T) {
	_, err := NewTable(bounds(), 0, 0.5)
	assert.ErrorContains(t, err, "0 buckets")
	_, err = NewTable(bounds(), 4, 0)
	assert.ErrorContains(t, err, "decay 0")

	tb, err := NewTable(bounds(), 4, 0.5) // CPU buckets of 0.5 core from 0.5, memory of 256 MiB from 64 MiB
	require.NoError(t, err)
	a := gym.Allocation{Replicas: 3, CPU: 1.1, Memory: 400 * gym.MiB}
	_, ok := tb.Lookup(a)
	assert.False(t, ok)
	require.NoError(t, tb.Record(a, 1, 0.25, 0.125))
	require.NoError(t, tb.Record(gym.Allocation{Replicas: 3, CPU: 1.4, Memory: 500 * gym.MiB}, 0.5, 0.75, 0.625)) // same cell
	p, ok := tb.Lookup(a)
	require.True(t, ok)
	assert.Equal(t, Perf{SP: 0.75, CPUUtil: 0.5, MemUtil: 0.375, Steps: 2}, p, "moving averages with decay 0.5")
	assert.ErrorContains(t, tb.Record(a, math.NaN(), 0, 0), "NaN is not finite")
	assert.Equal(t, 1, tb.Len())

	// Out-of-bounds allocations fall into the edge cells.
	require.NoError(t, tb.Record(gym.Allocation{Replicas: 40, CPU: 9, Memory: -1}, 0.9, 0.1, 0.1))
	_, ok = tb.Lookup(gym.Allocation{Replicas: 10, CPU: 2.4, Memory: 64 * gym.MiB})
	assert.True(t, ok)

	// Neighbours: one replica more, one CPU bucket less.
	require.NoError(t, tb.Record(gym.Allocation{Replicas: 4, CPU: 1.1, Memory: 400 * gym.MiB}, 0.3, 0, 0))
	require.NoError(t, tb.Record(gym.Allocation{Replicas: 3, CPU: 0.7, Memory: 400 * gym.MiB}, 0.2, 0, 0))
	f := tb.Features(make([]float64, FeatureDim), a)
	assert.Equal(t, []float64{
		0.5, 0.375, // here: CPU and memory utilisation
		0.75, 1, // here
		0, 0, // replicas −1
		0.3, 1, // replicas +1
		0.2, 1, // CPU −1
		0, 0, 0, 0, 0, 0, // CPU +1, memory −1, +1
	}, f)
}

// stepEnv is a gym.Env whose arrival rate follows rates and whose
// allocation is the last action.
type stepEnv struct {
	rates []float64
	t     int
	alloc gym.Allocation
}

func (e *stepEnv) ObservationSpace() gym.Space { return gym.ObservationSpace() }
func (e *stepEnv) ActionSpace() gym.Space      { return gym.ActionSpace(bounds()) }
func (e *stepEnv) info() gym.Info {
	return gym.Info{Step: e.t, SP: 1, Metrics: gym.Metrics{Replicas: e.alloc.Replicas, CPULimit: e.alloc.CPU, MemoryLimit: e.alloc.Memory,
		CPUUsage: 0.5 * e.alloc.CPU * float64(e.alloc.Replicas), ArrivalRate: e.rates[e.t%len(e.rates)]}}
}
func (e *stepEnv) Reset(context.Context, uint64) ([]float64, gym.Info, error) {
	e.alloc = gym.Allocation{Replicas: 2, CPU: 1, Memory: 512 * gym.MiB}
	return make([]float64, gym.StateDim), e.info(), nil
}
func (e *stepEnv) Step(_ context.Context, a []float64) ([]float64, float64, bool, bool, gym.Info, error) {
	e.t++
	e.alloc = gym.Allocation{Replicas: int(a[0]), CPU: a[1], Memory: a[2]}
	return make([]float64, gym.StateDim), 1, false, false, e.info(), nil
}

func TestPlus(t *testing.T) {
	// A rate that doubles and halves every step: once fitted, the forecast
	// says what comes next; the last value would say "no change".
	env := &stepEnv{rates: []float64{100, 200}}
	fc, err := forecast.NewOnline(forecast.Config{Order: 1}, 50, 1)
	require.NoError(t, err)
	tb, err := NewTable(bounds(), 4, 0.5)
	require.NoError(t, err)
	p, err := NewPlus(env, fc, tb)
	require.NoError(t, err)
	space := p.ObservationSpace()
	require.Equal(t, gym.StateDim+PlusDim, space.Dim())
	assert.Equal(t, "load_forecast", space.Names[gym.StateDim])
	assert.Equal(t, "table_known_memory_up", space.Names[space.Dim()-1])

	ctx := context.Background()
	obs, _, err := p.Reset(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, space.Contains(obs))
	assert.Zero(t, obs[gym.StateDim], "naive forecast at first")
	act := []float64{2, 1, 512 * gym.MiB}
	for range 10 {
		obs, _, _, _, _, err = p.Step(ctx, act)
		require.NoError(t, err)
		require.NoError(t, space.Contains(obs))
	}
	// Step 10 saw 100 req/s; the forecast is 200: log2(2)/3.
	assert.InDelta(t, 1.0/3, obs[gym.StateDim], 0.02)
	f := obs[gym.StateDim+1:]
	assert.Equal(t, []float64{0.5, 0}, f[:2], "utilisation recorded at the allocation")
	assert.Equal(t, []float64{1, 1}, f[2:4], "SLO preserved here")

	_, err = NewPlus(env, nil, tb)
	assert.Error(t, err)
}
