package bootstrap

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/gym"
)

func rnd(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0xB0C5)) }

// trueReward is a one-step task's reward: it grows with the action inside
// the recorded range |a| ≤ 0.3 and falls steeply beyond it, where no
// record shows it.
func trueReward(a float64) float64 {
	return a - 5*math.Pow(math.Max(0, math.Abs(a)-0.3), 2)
}

// records are n one-step transitions of a cautious controller: actions in
// [−0.3, 0.3], whatever the state.
func records(n int, r *rand.Rand) []agent.Transition {
	var out []agent.Transition
	for range n {
		s := []float64{r.Float64()*2 - 1, r.Float64()*2 - 1}
		a := r.Float64()*0.6 - 0.3
		out = append(out, agent.Transition{State: s, Action: []float64{a}, Reward: trueReward(a), Next: s, Done: true})
	}
	return out
}

// TestBCQReleaseKeepsTraining: an agent whose workspaces are dropped after
// every update (as the agent runner does) learns what one that keeps them
// learns, up to the float32 rounding of its idle optimiser moments.
func TestBCQReleaseKeepsTraining(t *testing.T) {
	data := records(200, rnd(9))
	run := func(release bool) []float64 {
		b, err := New(2, 1, rnd(4), WithBatch(16))
		require.NoError(t, err)
		for _, tr := range data {
			b.Observe(tr)
		}
		for range 30 {
			_, err := b.Update()
			require.NoError(t, err)
			if release {
				b.Release()
			}
		}
		return b.Act(make([]float64, 1), []float64{0.2, -0.4}, false)
	}
	kept, released := run(false), run(true)
	assert.NotEqual(t, []float64{0}, kept, "the agent learned")
	assert.InDeltaSlice(t, kept, released, 1e-9)
}

// TestBCQFreezeActsAsAgent: the frozen policy of a trained agent draws the
// same actions, exploring or not, as an identical agent that was not
// frozen.
func TestBCQFreezeActsAsAgent(t *testing.T) {
	data := records(200, rnd(9))
	trained := func() *BCQ {
		b, err := New(2, 1, rnd(4), WithBatch(16), WithReplay(150))
		require.NoError(t, err)
		for _, tr := range data {
			b.Observe(tr)
		}
		require.Equal(t, 150, b.Replay().Len(), "the replay memory keeps its capacity's newest transitions")
		for range 30 {
			_, err := b.Update()
			require.NoError(t, err)
		}
		return b
	}
	kept, frozen := trained(), trained().Freeze()
	for i, s := range [][]float64{{0.2, -0.4}, {-1, 1}, {0, 0.5}} {
		explore := i%2 == 1
		assert.Equal(t, kept.Act(make([]float64, 1), s, explore), frozen.Act(make([]float64, 1), s, explore), "state %v explore %v", s, explore)
	}
}

// TestBCQAvoidsExtrapolationError is the reason for BCQ: trained on the
// same records, plain DDPG's critic extrapolates the rising reward beyond
// the recorded actions, its actor goes there and its Q overrates what it
// then earns; BCQ stays near the records and earns more.
func TestBCQAvoidsExtrapolationError(t *testing.T) {
	ctx := context.Background()
	data := records(1000, rnd(1))
	bcq, err := New(2, 1, rnd(2), WithPhi(0.05))
	require.NoError(t, err)
	plain, err := ddpg.New(2, 1, rnd(3), ddpg.WithWarmUp(64))
	require.NoError(t, err)
	for _, ag := range []agent.Agent{bcq, plain} {
		_, err := Offline(ctx, ag, data, 1500, nil)
		require.NoError(t, err)
	}
	states := records(50, rnd(4))
	var earnB, earnD, overB, overD float64
	act := []float64{0}
	for _, tr := range states {
		bcq.Act(act, tr.State, false)
		assert.LessOrEqual(t, math.Abs(act[0]), 0.3+bcq.Config().Phi, "BCQ acts within the records' range and its perturbation")
		earnB += trueReward(act[0]) / 50
		overB += (bcq.Q(tr.State, act) - trueReward(act[0])) / 50
		plain.Act(act, tr.State, false)
		earnD += trueReward(act[0]) / 50
		overD += (ddpgQ(plain, tr.State, act) - trueReward(act[0])) / 50
	}
	t.Logf("reward earned: BCQ %.3f, DDPG %.3f; Q minus reward: BCQ %.3f, DDPG %.3f", earnB, earnD, overB, overD)
	assert.Greater(t, earnB, 0.03, "BCQ improves on the recorded controller (its mean reward is 0)")
	assert.Greater(t, earnB, earnD, "BCQ earns more than DDPG trained on the same records")
	assert.Greater(t, overD, overB+0.3, "DDPG overrates its out-of-distribution actions")
}

func ddpgQ(a *ddpg.Agent, s, act []float64) float64 {
	q := []float64{0}
	a.Critic().Forward(q, append(append([]float64(nil), s...), act...), 1)
	return q[0]
}

func TestBCQCheckpointAndErrors(t *testing.T) {
	_, err := New(0, 1, rnd(1))
	assert.ErrorContains(t, err, "state dim 0")
	_, err = New(2, 1, nil)
	assert.ErrorContains(t, err, "nil random source")
	_, err = New(2, 1, rnd(1), WithPhi(3))
	assert.ErrorContains(t, err, "Φ 3 outside")
	_, err = Offline(context.Background(), mustBCQ(t, 1), nil, 10, nil)
	assert.ErrorContains(t, err, "no recorded transitions")
	_, err = Offline(context.Background(), mustBCQ(t, 1), records(10, rnd(1)), 5, nil)
	assert.ErrorContains(t, err, "10 recorded transitions are too few")

	a := mustBCQ(t, 1)
	_, err = Offline(context.Background(), a, records(200, rnd(5)), 20, nil)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "bcq.ckpt")
	require.NoError(t, a.Save(path))
	b := mustBCQ(t, 9)
	require.NoError(t, b.Load(path))
	s, act := []float64{0.1, -0.4}, []float64{0.2}
	assert.Equal(t, a.Q(s, act), b.Q(s, act))
	other, err := New(3, 1, rnd(1))
	require.NoError(t, err)
	assert.ErrorContains(t, other.Load(path), "checkpoint is bcq state 2")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Offline(ctx, b, records(200, rnd(5)), 20, nil)
	assert.ErrorIs(t, err, context.Canceled)
}

func mustBCQ(t *testing.T, seed uint64) *BCQ {
	t.Helper()
	b, err := New(2, 1, rnd(seed))
	require.NoError(t, err)
	return b
}

// BenchmarkRetainedMemory reports the heap an idle BCQ agent keeps after a
// training update: with its workspaces (kept), after Release (released),
// after acting once more and Release (acted: what the agent runner, which
// hosts an agent per MPA, holds per agent between steps), the same with
// the runner's replay memory full (full: its steady state after 4 h), and
// its frozen policy alone (SERVING): go test -bench RetainedMemory.
func BenchmarkRetainedMemory(b *testing.B) {
	heap := func() uint64 {
		// Twice: scratch pooled by Release survives one collection.
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n, replay = 50, 1024 // replay: controller/agents.DefaultReplay
	for _, name := range []string{"kept", "released", "acted", "full", "frozen"} {
		b.Run(name, func(b *testing.B) {
			var perAgent float64
			for b.Loop() {
				h0 := heap()
				ags := make([]agent.Policy, n)
				for i := range ags {
					a, err := New(gym.StateDim, gym.ActDim, rnd(uint64(i)), WithReplay(replay))
					if err != nil {
						b.Fatal(err)
					}
					s := make([]float64, gym.StateDim)
					records := 100
					if name == "full" {
						records = replay
					}
					for range records {
						a.Observe(agent.Transition{State: s, Action: make([]float64, gym.ActDim), Reward: 1, Next: s})
					}
					if _, err := a.Update(); err != nil {
						b.Fatal(err)
					}
					switch name {
					case "kept":
						ags[i] = a
					case "frozen":
						ags[i] = a.Freeze()
					default:
						a.Release()
						if name != "released" {
							a.Act(make([]float64, gym.ActDim), s, true)
							a.Release()
						}
						ags[i] = a
					}
				}
				perAgent = float64(heap()-h0) / n / (1 << 20)
				runtime.KeepAlive(ags)
			}
			b.ReportMetric(perAgent, "MiB/agent")
		})
	}
}

// BenchmarkUpdate reports the time and garbage of one BCQ update of the
// runner's agents, keeping the workspaces between updates or releasing
// them after each (as the runner does after a training turn).
func BenchmarkUpdate(b *testing.B) {
	for _, release := range []bool{false, true} {
		b.Run(map[bool]string{false: "kept", true: "released"}[release], func(b *testing.B) {
			a, err := New(gym.StateDim, gym.ActDim, rnd(1), WithReplay(1024))
			if err != nil {
				b.Fatal(err)
			}
			s := make([]float64, gym.StateDim)
			for range 256 {
				a.Observe(agent.Transition{State: s, Action: make([]float64, gym.ActDim), Reward: 1, Next: s})
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Update(); err != nil {
					b.Fatal(err)
				}
				if release {
					a.Release()
				}
			}
		})
	}
}
