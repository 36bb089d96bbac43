package meta

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func traj(episode int, reward float64, steps int) Trajectory {
	el := make([]float64, steps)
	for i := range el {
		el[i] = float64(episode*100 + i)
	}
	return Trajectory{Elements: el, Steps: steps, Reward: reward, Episode: episode}
}

func episodes(ts []Trajectory) []int {
	var out []int
	for _, t := range ts {
		out = append(out, t.Episode)
	}
	return out
}

func TestBufferSelection(t *testing.T) {
	b, err := NewBuffer(6, 1000)
	require.NoError(t, err)
	rewards := []float64{5, 1, 9, 3, 9, 7, 2, 8}
	for i, r := range rewards {
		require.NoError(t, b.Add(traj(i, r, 2), 1))
	}
	assert.Equal(t, 6, b.Len(), "capacity drops the oldest (episodes 0 and 1)")
	assert.Equal(t, []int{4, 2, 7, 5}, episodes(b.Select(4, TopM, 0)), "best first; the newer of equal rewards first")
	assert.Equal(t, []int{4, 2, 7, 3, 6}, episodes(b.Select(5, BestWorst, 0)), "3 best, 2 worst")
	assert.Equal(t, []int{7, 5, 6}, episodes(b.Select(3, BestWorst, 5)), "episodes before 5 left out")
	assert.Len(t, b.Select(20, TopM, 0), 6, "fewer than m: all")
}

func TestBufferExpiry(t *testing.T) {
	b, err := NewBuffer(32, 250)
	require.NoError(t, err)
	for i := range 5 {
		require.NoError(t, b.Add(traj(i, float64(i), 100), 1))
	}
	// After episode 4 ends at step 500, episodes ending at 200 or earlier
	// are more than 250 steps old.
	assert.Equal(t, []int{4, 3, 2}, episodes(b.Select(10, TopM, 0)))

	assert.ErrorContains(t, b.Add(Trajectory{Elements: make([]float64, 3), Steps: 2, Episode: 9}, 2), "episode 9 has 3 values for 2 steps of 2 features")
	_, err = NewBuffer(0, 10)
	assert.Error(t, err)
}

func TestBundle(t *testing.T) {
	a := Trajectory{Elements: []float64{1, 2, 3, 4, 5, 6}, Steps: 3}
	short := Trajectory{Elements: []float64{7, 8}, Steps: 1}
	got := Bundle(nil, []Trajectory{a, short}, 2, 2)
	assert.Equal(t, []float64{3, 4, 5, 6, 0, 0, 7, 8}, got, "the last steps; a short one ends at the last step")
}
