package meta

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestFLASH(t *testing.T) *FLASH {
	t.Helper()
	e, err := NewEmbedder(Config{Features: 4, Hidden: 6, Layers: 1, FC: 8, Embed: 2}, rnd(11))
	require.NoError(t, err)
	opts := DefaultOptions(5)
	opts.M, opts.LR = 4, 1e-2
	f, err := NewFLASH(e, opts)
	require.NoError(t, err)
	return f
}

// episode is 5 steps of a task whose state's first feature sits at level.
func episode(level float64, seed uint64) (states, actions [][]float64, rewards []float64) {
	r := rnd(seed)
	for range 5 {
		states = append(states, []float64{level + 0.1*r.NormFloat64(), r.NormFloat64()})
		actions = append(actions, []float64{r.Float64()*2 - 1})
		rewards = append(rewards, level)
	}
	return
}

func TestFLASHAPI(t *testing.T) {
	f := newTestFLASH(t)
	require.NoError(t, f.Register(Task{Name: "a", StateDim: 2, ActionDim: 1}))
	assert.ErrorContains(t, f.Register(Task{Name: "a", StateDim: 2, ActionDim: 1}), "already registered")
	assert.ErrorContains(t, f.Register(Task{Name: "b", StateDim: 3, ActionDim: 1}), "must be the embedder's 4 features")
	_, err := f.Embedding(nil, "nope")
	assert.ErrorContains(t, err, `task "nope" is not registered`)

	e0, err := f.Embedding(nil, "a")
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 0}, e0, "no episode yet: zeros")

	s, a, r := episode(1, 1)
	assert.ErrorContains(t, f.Insert("a", s[:4], a, r), "4 states, 5 actions and 5 rewards")
	a[2] = []float64{1, 2}
	assert.ErrorContains(t, f.Insert("a", s, a, r), "step 2: state of 2 and action of 2 values")
	s, a, r = episode(1, 1)
	require.NoError(t, f.Insert("a", s, a, r))
	e1, err := f.Embedding(nil, "a")
	require.NoError(t, err)
	assert.NotEqual(t, []float64{0, 0}, e1)

	assert.ErrorContains(t, f.AddGrad("a", []float64{1, 1}), "meta updates are off")
	require.NoError(t, f.Register(Task{Name: "new", StateDim: 2, ActionDim: 1}))
	f.SetMetaUpdates(true)
	_, err = f.Embedding(nil, "new")
	require.NoError(t, err)
	assert.NoError(t, f.AddGrad("new", []float64{1, 1}), "no episode yet: a zero embedding, nothing to learn")
	f.Step()
	f.SetMetaUpdates(false)
	f.Step() // nothing pending: the frozen embedder does not move
	e2, _ := f.Embedding(nil, "a")
	assert.Equal(t, e1, e2)

	f.Unregister("a")
	f.Unregister("a") // not registered: nothing to do
	_, err = f.Embedding(nil, "a")
	assert.ErrorContains(t, err, `task "a" is not registered`)
	require.NoError(t, f.Register(Task{Name: "a", StateDim: 2, ActionDim: 1}), "a removed task can be registered again")
	e3, err := f.Embedding(nil, "a")
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 0}, e3, "its trajectories went with it")
}

// TestFLASHLearnsThroughEmbedding: with meta updates on, a base learner's
// loss that needs the embedding to tell two tasks apart (embedding[0]
// should be 1 for task "hi" and 0 for task "lo") falls as its gradient is
// handed back through AddGrad; with updates off the embedder is frozen.
func TestFLASHLearnsThroughEmbedding(t *testing.T) {
	f := newTestFLASH(t)
	for _, n := range []string{"lo", "hi"} {
		require.NoError(t, f.Register(Task{Name: n, StateDim: 2, ActionDim: 1}))
	}
	for i := range 4 {
		s, a, r := episode(-1, uint64(10+i))
		require.NoError(t, f.Insert("lo", s, a, r))
		s, a, r = episode(1, uint64(20+i))
		require.NoError(t, f.Insert("hi", s, a, r))
	}
	want := map[string]float64{"lo": 0, "hi": 1}
	loss := func() float64 {
		var l float64
		for n, w := range want {
			e, err := f.Embedding(nil, n)
			require.NoError(t, err)
			l += (e[0] - w) * (e[0] - w)
		}
		return l
	}
	f.SetMetaUpdates(false)
	before := loss()
	f.SetMetaUpdates(true)
	assert.ErrorContains(t, f.AddGrad("nope", []float64{0, 0}), "not registered")
	for range 150 {
		for _, n := range []string{"lo", "hi"} {
			e, err := f.Embedding(nil, n)
			require.NoError(t, err)
			require.NoError(t, f.AddGrad(n, []float64{2 * (e[0] - want[n]), 0}))
		}
	}
	f.SetMetaUpdates(false)
	after := loss()
	t.Logf("loss before %.4f, after %.4f", before, after)
	assert.Less(t, after, before/10, "the embedding learnt to tell the tasks apart")
	assert.Equal(t, after, loss(), "frozen: the same embedding again")

	f.SetMetaUpdates(true)
	_, err := f.Embedding(nil, "lo")
	require.NoError(t, err)
	assert.ErrorContains(t, f.AddGrad("hi", []float64{0, 0}), `last embedded task "lo", not "hi"`)
}

// TestFLASHWithoutBaseLearnerGradient: with Options.LR zero the base
// learner's gradient leaves the embedder as it was, and a negative or
// infinite rate is refused.
func TestFLASHWithoutBaseLearnerGradient(t *testing.T) {
	e, err := NewEmbedder(Config{Features: 4, Hidden: 6, Layers: 1, FC: 8, Embed: 2}, rnd(11))
	require.NoError(t, err)
	opts := DefaultOptions(5)
	opts.M, opts.LR = 4, 0
	f, err := NewFLASH(e, opts)
	require.NoError(t, err)
	require.NoError(t, f.Register(Task{Name: "a", StateDim: 2, ActionDim: 1}))
	s, a, r := episode(1, 1)
	require.NoError(t, f.Insert("a", s, a, r))
	f.SetMetaUpdates(true)
	before := append([]float64(nil), e.Params()[0].Values()...)
	for range 5 {
		_, err := f.Embedding(nil, "a")
		require.NoError(t, err)
		require.NoError(t, f.AddGrad("a", []float64{1, -1}))
		f.Step()
	}
	assert.Equal(t, before, e.Params()[0].Values(), "the embedder did not move")

	for _, lr := range []float64{-1e-3, math.Inf(1), math.NaN()} {
		opts.LR = lr
		_, err := NewFLASH(e, opts)
		assert.ErrorContains(t, err, "finite and not negative", "%v", lr)
	}
}
