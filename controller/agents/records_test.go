package agents

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

func TestTransitions(t *testing.T) {
	space := gym.ActionSpace(gym.Bounds{MinReplicas: 1, MaxReplicas: 11, MinCPU: 0.1, MaxCPU: 2.1, MinMemory: 0, MaxMemory: 1000})
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	step := func(ep int64, i int, sec int, stage string, reward float64) trajectory.Step {
		s := make([]float64, gym.StateDim)
		s[0] = float64(sec)
		return trajectory.Step{Episode: ep, T: i, Time: t0.Add(time.Duration(sec) * time.Second), State: s,
			Action: []float64{6, 1.1, 500}, Reward: reward, Stage: stage}
	}
	trs := []trajectory.Trajectory{
		{Steps: []trajectory.Step{step(0, 0, 0, "OFFLINE", 1), step(0, 1, 15, "OFFLINE", 2)}},
		// The next episode follows without a gap; its second step comes
		// late (a missed round is still consecutive), then a long gap.
		{Steps: []trajectory.Step{step(1, 0, 30, "OFFLINE", 3), step(1, 1, 60, "OFFLINE", 4), step(1, 2, 200, "OFFLINE", 5)}},
		{Steps: []trajectory.Step{step(2, 0, 215, "ONLINE", 6), step(2, 1, 230, "ONLINE", 7)}},
	}
	bad := step(3, 0, 245, "OFFLINE", math.NaN())
	trs = append(trs, trajectory.Trajectory{Steps: []trajectory.Step{bad, step(3, 1, 260, "OFFLINE", 8)}})

	got, until := Transitions(trs, gym.Absolute, space, "OFFLINE", 40*time.Second)
	require.Len(t, got, 4, "0→15, 15→30 (across episodes), 30→60, 200→215 (into ONLINE)")
	for i, want := range []struct{ reward, from, to float64 }{{1, 0, 15}, {2, 15, 30}, {3, 30, 60}, {5, 200, 215}} {
		assert.Equal(t, want.reward, got[i].Reward, "transition %d", i)
		assert.Equal(t, want.from, got[i].State[0], "transition %d", i)
		assert.Equal(t, want.to, got[i].Next[0], "transition %d", i)
		assert.False(t, got[i].Done, "truncation is not termination")
		assert.InDeltaSlice(t, []float64{0, 0, 0}, got[i].Action, 1e-12, "the middle of the box")
	}
	assert.Equal(t, t0.Add(260*time.Second), until)

	// Relative: the allocation set, against the one the state shows (3
	// replicas of 0.55 cores and 250 bytes: [6, 1.1, 500] doubles each).
	b := gym.BoundsOf(space)
	a, c := step(4, 0, 300, "OFFLINE", 1), step(4, 1, 315, "OFFLINE", 1)
	gym.State(a.State, gym.Metrics{Replicas: 3, CPULimit: 0.55, MemoryLimit: 250}, 1, 0, b, gym.DefaultCapacities())
	rel, _ := Transitions([]trajectory.Trajectory{{Steps: []trajectory.Step{a, c}}}, gym.Relative, space, "OFFLINE", time.Minute)
	require.Len(t, rel, 1)
	assert.InDeltaSlice(t, []float64{1, 1, 1}, rel[0].Action, 1e-9)

	none, until := Transitions(nil, gym.Relative, space, "OFFLINE", time.Minute)
	assert.Empty(t, none)
	assert.True(t, until.IsZero())
}
