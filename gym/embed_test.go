package gym

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// constEnv observes [1, 2] and rewards the first action value.
type constEnv struct{}

func (constEnv) ObservationSpace() Space {
	return Space{Names: []string{"a", "b"}, Low: []float64{0, 0}, High: []float64{1, 1}}
}
func (constEnv) ActionSpace() Space { return ActionSpace(DefaultBounds()) }
func (constEnv) Reset(context.Context, uint64) ([]float64, Info, error) {
	return []float64{1, 2}, Info{}, nil
}
func (constEnv) Step(_ context.Context, a []float64) ([]float64, float64, bool, bool, Info, error) {
	return []float64{1, 2}, a[0], false, false, Info{Step: 1}, nil
}

func TestEmbed(t *testing.T) {
	z := []float64{0.5, -1}
	e, err := Embed(constEnv{}, z)
	require.NoError(t, err)
	z[0] = 9 // copied
	obs, _, err := e.Reset(context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 0.5, -1}, obs)
	s := e.ObservationSpace()
	assert.Equal(t, []string{"a", "b", "embedding_0", "embedding_1"}, s.Names)
	assert.Equal(t, 4, s.Dim())
	assert.True(t, math.IsInf(s.High[3], 1))
	assert.Equal(t, 2, constEnv{}.ObservationSpace().Dim(), "wrapped space untouched")

	require.NoError(t, e.SetEmbedding([]float64{3, 4}))
	obs, r, _, _, info, err := e.Step(context.Background(), []float64{7, 1, 1})
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 3, 4}, obs)
	assert.Equal(t, 7.0, r)
	assert.Equal(t, 1, info.Step)

	assert.ErrorContains(t, e.SetEmbedding([]float64{1}), "embedding has 1 values, want 2")
	assert.ErrorContains(t, e.SetEmbedding([]float64{1, math.NaN()}), "embedding[1] is NaN")
	_, err = Embed(constEnv{}, nil)
	assert.ErrorContains(t, err, "embedding is empty")
}
