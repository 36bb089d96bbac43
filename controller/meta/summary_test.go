package meta

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// TestEmbedSummaries: embedding a bundle from its trajectories' summaries,
// computed one trajectory at a time, is embedding the bundle, and leaves no
// state a gradient could flow through.
func TestEmbedSummaries(t *testing.T) {
	r := rnd(5)
	e, err := NewEmbedder(Config{Features: 3, Hidden: 4, Layers: 2, FC: 5, Embed: 3, Output: rl.Tanh}, r)
	require.NoError(t, err)
	const m, steps, w, h2 = 3, 6, 3, 8
	bundle := randSlice(m*steps*w, r)
	want := make([]float64, 3)
	e.Embed(want, bundle, m, steps)

	sums := make([]float64, m*h2)
	for i := range m {
		e.Summarise(sums[i*h2:(i+1)*h2], bundle[i*steps*w:(i+1)*steps*w], 1, steps)
	}
	all := make([]float64, m*h2)
	e.Summarise(all, bundle, m, steps)
	assert.Equal(t, all, sums, "a trajectory's summary does not depend on the others in its batch")
	got := make([]float64, 3)
	e.EmbedSummaries(got, sums, m)
	assert.InDeltaSlice(t, want, got, 1e-12)
	assert.Panics(t, func() { e.AddGrad(make([]float64, 3)) }, "no Embed since: nothing to back-propagate into")
	assert.False(t, e.Backward(nil))

	assert.Panics(t, func() { e.Summarise(sums, bundle, m+1, steps) }, "too few values")
	assert.Panics(t, func() { e.EmbedSummaries(got, sums, 0) }, "an empty bundle")
	assert.Panics(t, func() { e.EmbedSummaries(got[:2], sums, m) }, "a short destination")
}

// TestFLASHFrozenCache: with meta updates off FLASH summarises each
// trajectory once, and its embedding stays what embedding the selected
// bundle gives, as trajectories arrive, leave the buffer, and when the
// embedder's weights change behind its back.
func TestFLASHFrozenCache(t *testing.T) {
	f := newTestFLASH(t)
	f.opts.Capacity = 6
	require.NoError(t, f.Register(Task{Name: "a", StateDim: 2, ActionDim: 1}))
	want := func() []float64 {
		tr := f.tasks["a"].buf.Select(f.opts.M, f.opts.Selection, f.opts.SkipEpisodes)
		b := Bundle(nil, tr, f.opts.Steps, 4)
		out := make([]float64, 2)
		f.emb.Embed(out, b, len(tr), f.opts.Steps)
		return out
	}
	for i := range 10 {
		s, a, r := episode(float64(i%3), uint64(i))
		require.NoError(t, f.Insert("a", s, a, r))
		got, err := f.Embedding(nil, "a")
		require.NoError(t, err)
		assert.InDeltaSlice(t, want(), got, 1e-12, "episode %d", i)
		assert.LessOrEqual(t, len(f.tasks["a"].summaries), f.tasks["a"].buf.Len(), "summaries of trajectories gone from the buffer are dropped")
	}
	assert.NotEmpty(t, f.tasks["a"].summaries)

	// Weights changed outside FLASH (a checkpoint loaded into the shared
	// embedder, say): the cached summaries are not used.
	v := f.emb.Params()[0].Values()
	for i := range v {
		v[i] *= 1.5
	}
	s, a, r := episode(2, 99)
	require.NoError(t, f.Insert("a", s, a, r))
	got, err := f.Embedding(nil, "a")
	require.NoError(t, err)
	assert.InDeltaSlice(t, want(), got, 1e-12, "after the weights changed")

	// With updates on nothing is cached (the weights move every step).
	f.SetMetaUpdates(true)
	assert.Empty(t, f.tasks["a"].summaries)
	s, a, r = episode(1, 100)
	require.NoError(t, f.Insert("a", s, a, r))
	_, err = f.Embedding(nil, "a")
	require.NoError(t, err)
	assert.Empty(t, f.tasks["a"].summaries)
}
