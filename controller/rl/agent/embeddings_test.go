package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEmbeddings(t *testing.T) {
	var none Embeddings
	assert.Error(t, none.Set(0, []float64{1}), "no embedding configured")
	rows := []float64{1, 2, 3}
	none.Refresh(rows, 3, []int{0})
	assert.Equal(t, []float64{1, 2, 3}, rows, "nothing to refresh")

	e := NewEmbeddings(2)
	assert.Nil(t, e.Grad(), "before any update")
	assert.ErrorContains(t, e.Set(0, []float64{1}), "1 values for an embedding of 2")
	require.NoError(t, e.Set(1, []float64{7, 8}))
	require.NoError(t, e.Set(0, []float64{5, 6})) // task 0 is current
	// Rows of width 3, the embedding in their last 2 values; task 2 has none.
	rows = []float64{0, 0, 0, 1, 1, 1, 2, 2, 2}
	tasks := []int{0, 1, 2}
	e.Refresh(rows, 3, tasks)
	assert.Equal(t, []float64{0, 5, 6, 1, 7, 8, 2, 2, 2}, rows)

	// Gradient rows of width 4 whose embedding ends at column 3.
	g := []float64{9, 1, 2, 9, 9, 10, 20, 9, 9, 100, 200, 9}
	e.StartUpdate()
	e.Accumulate(g, 4, 3, tasks)
	e.Accumulate(g, 4, 3, tasks)
	e.FinishUpdate()
	assert.Equal(t, []float64{2, 4}, e.Grad(), "the current task's rows only, summed")
	e.StartUpdate()
	assert.Equal(t, []float64{0, 0}, e.Grad())
}
