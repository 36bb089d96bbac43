package transfer

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
)

func TestCopy(t *testing.T) {
	src, err := ddpg.New(9, 3, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	dst, err := ddpg.New(9, 3, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	state := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.1}
	a := src.Act(make([]float64, 3), state, false)
	require.NotEqual(t, a, dst.Act(make([]float64, 3), state, false), "different seeds, different policies")
	require.NoError(t, Copy(dst, src, t.TempDir()))
	assert.Equal(t, a, dst.Act(make([]float64, 3), state, false), "the transferred policy acts as the source")

	other, err := ddpg.New(12, 3, rand.New(rand.NewPCG(5, 6)))
	require.NoError(t, err)
	assert.ErrorContains(t, Copy(other, src, t.TempDir()), "load into the target agent")
}
