package agent_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

func tr(i int) agent.Transition {
	f := float64(i)
	return agent.Transition{State: []float64{f, -f}, Action: []float64{f / 10}, Reward: f, Next: []float64{f + 1, -f - 1}, Done: i%2 == 1, Task: 10 + i}
}

func TestNewReplayInvalid(t *testing.T) {
	for _, c := range [][3]int{{0, 1, 1}, {1, 0, 1}, {1, 1, -1}} {
		_, err := agent.NewReplay(c[0], c[1], c[2])
		require.Error(t, err, "%v", c)
	}
}

func TestReplayRing(t *testing.T) {
	r, err := agent.NewReplay(3, 2, 1)
	require.NoError(t, err)
	b := agent.NewBatch(4, 2, 1)
	require.ErrorIs(t, r.Sample(b, rand.New(rand.NewPCG(1, 1))), agent.ErrEmpty)
	for i := range 5 { // 0..4: 0 and 1 are overwritten by 3 and 4
		r.Add(tr(i))
	}
	assert.Equal(t, 3, r.Len())
	assert.Equal(t, 3, r.Cap())
	rnd := rand.New(rand.NewPCG(3, 4))
	seen := map[float64]int{}
	for range 200 {
		require.NoError(t, r.Sample(b, rnd))
		for k := range b.Size() {
			i := b.Rewards[k]
			want := tr(int(i))
			assert.Equal(t, want.State, b.States[2*k:2*k+2])
			assert.Equal(t, want.Next, b.Next[2*k:2*k+2])
			assert.Equal(t, want.Action, b.Actions[k:k+1])
			assert.Equal(t, map[bool]float64{true: 1, false: 0}[want.Done], b.Done[k])
			assert.Equal(t, want.Task, b.Tasks[k], "the task survives the ring")
			seen[i]++
		}
	}
	assert.Len(t, seen, 3)
	for _, i := range []float64{2, 3, 4} {
		assert.InDelta(t, 800.0/3, seen[i], 60, "transition %v sampled uniformly", i)
	}
}

func TestReplayCopiesAndChecks(t *testing.T) {
	r, err := agent.NewReplay(2, 2, 1)
	require.NoError(t, err)
	x := tr(1)
	r.Add(x)
	x.State[0] = 99
	b := agent.NewBatch(1, 2, 1)
	require.NoError(t, r.Sample(b, rand.New(rand.NewPCG(1, 1))))
	assert.Equal(t, 1.0, b.States[0])
	assert.Panics(t, func() { r.Add(agent.Transition{State: []float64{1}, Action: []float64{1}, Next: []float64{1, 2}}) })
	require.Error(t, r.Sample(agent.NewBatch(1, 3, 1), rand.New(rand.NewPCG(1, 1))))
}

func TestReplaySampleDoesNotAllocate(t *testing.T) {
	r, err := agent.NewReplay(100, 9, 3)
	require.NoError(t, err)
	for i := range 100 {
		f := float64(i)
		r.Add(agent.Transition{State: make([]float64, 9), Action: []float64{f, f, f}, Next: make([]float64, 9)})
	}
	b := agent.NewBatch(64, 9, 3)
	rnd := rand.New(rand.NewPCG(1, 1))
	assert.Zero(t, testing.AllocsPerRun(50, func() { _ = r.Sample(b, rnd) }))
	tr := agent.Transition{State: make([]float64, 9), Action: make([]float64, 3), Next: make([]float64, 9)}
	assert.Zero(t, testing.AllocsPerRun(50, func() { r.Add(tr) }), "full buffer overwrites in place")
}

func TestFake(t *testing.T) {
	var a agent.Agent = agent.NewFake([]float64{0.5, -0.5})
	f := a.(*agent.Fake)
	dst := make([]float64, 2)
	assert.Equal(t, []float64{0.5, -0.5}, a.Act(dst, []float64{1}, true))
	x := tr(3)
	a.Observe(x)
	x.State[0] = 42
	assert.Equal(t, 3.0, f.Observed[0].State[0])
	s, err := a.Update()
	require.NoError(t, err)
	assert.Equal(t, agent.Stats{Updated: true, Updates: 1, Steps: 1}, s)

	path := filepath.Join(t.TempDir(), "fake.ckpt")
	require.NoError(t, a.Save(path))
	g := agent.NewFake([]float64{0, 0})
	require.NoError(t, g.Load(path))
	assert.Equal(t, f.Action, g.Action)
	assert.Equal(t, 1, g.Acts)
	assert.Equal(t, 1, g.Updates)
	require.Error(t, g.Load(filepath.Join(t.TempDir(), "missing")))

	boom := errors.New("boom")
	f.UpdateErr = boom
	_, err = a.Update()
	require.ErrorIs(t, err, boom)

	f.Policy = func(dst, state []float64, _ bool) { dst[0], dst[1] = state[0], -state[0] }
	assert.Equal(t, []float64{0.25, -0.25}, a.Act(dst, []float64{0.25}, false))
	assert.Panics(t, func() { agent.NewFake([]float64{1}).Act(dst, nil, false) })
}

func ExampleReplay() {
	r, _ := agent.NewReplay(1000, 2, 1)
	r.Add(agent.Transition{State: []float64{0, 1}, Action: []float64{0.5}, Reward: 1, Next: []float64{1, 1}})
	b := agent.NewBatch(2, 2, 1)
	_ = r.Sample(b, rand.New(rand.NewPCG(1, 1)))
	fmt.Println(r.Len(), b.States, b.Actions, b.Rewards)
	// Output: 1 [0 1 0 1] [0.5 0.5] [1 1]
}
