package ddpg_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
)

// toyReward is the one-step task: the best action is 0.5·s.
func toyReward(s, a float64) float64 { d := a - 0.5*s; return -d * d }

// trainToy runs steps one-step episodes with one update per step.
func trainToy(t testing.TB, ag *ddpg.Agent, env *rand.Rand, steps int) {
	t.Helper()
	s, a := make([]float64, 1), make([]float64, 1)
	for range steps {
		s[0] = 2*env.Float64() - 1
		ag.Act(a, s, true)
		ag.Observe(agent.Transition{State: s, Action: a, Reward: toyReward(s[0], a[0]), Next: s, Done: true})
		_, err := ag.Update()
		require.NoError(t, err)
	}
}

// evalToy returns the greedy policy's mean reward over a grid of states.
func evalToy(ag *ddpg.Agent) float64 {
	s, a := make([]float64, 1), make([]float64, 1)
	var sum float64
	const n = 41
	for i := range n {
		s[0] = -1 + 2*float64(i)/(n-1)
		ag.Act(a, s, false)
		sum += toyReward(s[0], a[0])
	}
	return sum / n
}

func TestLearnsToyTask(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		ag, err := ddpg.New(1, 1, rand.New(rand.NewPCG(seed, 7)))
		require.NoError(t, err)
		before := evalToy(ag)
		trainToy(t, ag, rand.New(rand.NewPCG(seed, 8)), 3000)
		after := evalToy(ag)
		t.Logf("seed %d: mean reward %.5f → %.5f", seed, before, after)
		assert.Less(t, before, -0.05, "seed %d: untrained policy is poor", seed)
		assert.Greater(t, after, -0.005, "seed %d: learnt policy is near optimal", seed)
	}
}

// The toy test can fail: an actor that barely learns stays poor.
func TestToyTaskNegativeControl(t *testing.T) {
	ag, err := ddpg.New(1, 1, rand.New(rand.NewPCG(1, 7)), ddpg.WithLearningRates(1e-9, 3e-3))
	require.NoError(t, err)
	trainToy(t, ag, rand.New(rand.NewPCG(1, 8)), 1000)
	assert.Less(t, evalToy(ag), -0.05)
}

func newFIRM(t testing.TB, seed uint64, opts ...ddpg.Option) *ddpg.Agent {
	t.Helper()
	ag, err := ddpg.New(9, 3, rand.New(rand.NewPCG(seed, seed+1)), opts...)
	require.NoError(t, err)
	return ag
}

// feed observes n random transitions drawn from env, acting with exploration.
func feed(ag *ddpg.Agent, env *rand.Rand, n int, update bool) {
	s, next, a := make([]float64, 9), make([]float64, 9), make([]float64, 3)
	for i := range n {
		for j := range s {
			s[j], next[j] = env.Float64(), env.Float64()
		}
		ag.Act(a, s, true)
		ag.Observe(agent.Transition{State: s, Action: a, Reward: env.NormFloat64(), Next: next, Done: i%100 == 99})
		if update {
			if _, err := ag.Update(); err != nil {
				panic(err)
			}
		}
	}
}

func TestSameSeedSameWeights(t *testing.T) {
	run := func(seed uint64, opts ...ddpg.Option) *ddpg.Agent {
		ag := newFIRM(t, seed, opts...)
		feed(ag, rand.New(rand.NewPCG(9, 9)), 300, true)
		return ag
	}
	for _, opts := range [][]ddpg.Option{nil, {ddpg.WithOUNoise(0.15, 0.2), ddpg.WithGradClip(0.5)}} {
		a, b, c := run(1, opts...), run(1, opts...), run(2, opts...)
		assert.Equal(t, a.Actor().Params().Values(), b.Actor().Params().Values())
		assert.Equal(t, a.Critic().Params().Values(), b.Critic().Params().Values())
		assert.NotEqual(t, a.Actor().Params().Values(), c.Actor().Params().Values())
	}
}

func TestActGreedyIsDeterministic(t *testing.T) {
	ag := newFIRM(t, 1)
	feed(ag, rand.New(rand.NewPCG(1, 1)), 100, true)
	s := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	want := ag.Act(make([]float64, 3), s, false)
	eps := ag.Epsilon()
	for range 5 {
		assert.Equal(t, want, ag.Act(make([]float64, 3), s, false))
	}
	assert.Equal(t, eps, ag.Epsilon(), "greedy acts do not decay ε")
	noisy := ag.Act(make([]float64, 3), s, true)
	assert.NotEqual(t, want, noisy)
	for _, v := range noisy {
		assert.True(t, v >= -1 && v <= 1)
	}
	assert.InDelta(t, eps-1e-6, ag.Epsilon(), 1e-15)
	dst := make([]float64, 3)
	assert.Zero(t, testing.AllocsPerRun(100, func() { ag.Act(dst, s, true) }))
}

// TestFreezeActsAsAgent: the frozen policy of a trained agent acts, with
// and without exploration (OU noise, ε decay), as an identical agent that
// was not frozen.
func TestFreezeActsAsAgent(t *testing.T) {
	trained := func() *ddpg.Agent {
		ag := newFIRM(t, 3, ddpg.WithOUNoise(0.15, 0.2), ddpg.WithReplay(120, 64))
		feed(ag, rand.New(rand.NewPCG(4, 4)), 200, true)
		require.Equal(t, 120, ag.Replay().Len(), "the replay memory keeps its capacity's newest transitions")
		return ag
	}
	kept, frozen := trained(), trained().Freeze()
	s := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	for i := range 6 {
		explore := i%3 != 0
		assert.Equal(t, kept.Act(make([]float64, 3), s, explore), frozen.Act(make([]float64, 3), s, explore), "act %d explore %v", i, explore)
	}
}

func TestEpsilonSchedule(t *testing.T) {
	ag := newFIRM(t, 1, ddpg.WithEpsilon(1, 0.3, 0.2))
	feed(ag, rand.New(rand.NewPCG(1, 1)), 5, false)
	assert.Equal(t, 0.2, ag.Epsilon())
	// ε = 0 and no decay: exploring equals greedy.
	ag = newFIRM(t, 1, ddpg.WithEpsilon(0, 0, 0))
	s := make([]float64, 9)
	assert.Equal(t, ag.Act(make([]float64, 3), s, false), ag.Act(make([]float64, 3), s, true))
}

// TestSetEpsilon: an agent whose ε decayed starts again from the
// schedule's start, decays from there on, and refuses an ε below the
// schedule's minimum.
func TestSetEpsilon(t *testing.T) {
	ag := newFIRM(t, 1, ddpg.WithEpsilon(1, 0.3, 0.2))
	feed(ag, rand.New(rand.NewPCG(1, 1)), 5, false)
	require.Equal(t, 0.2, ag.Epsilon())
	require.NoError(t, ag.SetEpsilon(ag.EpsilonStart()))
	assert.Equal(t, 1.0, ag.Epsilon())
	ag.Act(make([]float64, 3), make([]float64, 9), true)
	assert.InDelta(t, 0.7, ag.Epsilon(), 1e-15)
	for _, bad := range []float64{0.1, math.NaN(), math.Inf(1)} {
		assert.Error(t, ag.SetEpsilon(bad), "ε %v", bad)
	}
	assert.InDelta(t, 0.7, ag.Epsilon(), 1e-15, "a refused ε leaves the agent's")
}

func TestWarmUp(t *testing.T) {
	ag := newFIRM(t, 1, ddpg.WithWarmUp(100))
	feed(ag, rand.New(rand.NewPCG(1, 1)), 99, false)
	st, err := ag.Update()
	require.NoError(t, err)
	assert.False(t, st.Updated)
	assert.Equal(t, 99, st.Steps)
	feed(ag, rand.New(rand.NewPCG(1, 1)), 1, false)
	st, err = ag.Update()
	require.NoError(t, err)
	assert.True(t, st.Updated)
	assert.Equal(t, 1, st.Updates)
	assert.Positive(t, st.CriticLoss)
	assert.Positive(t, st.CriticGradNorm)
	assert.Positive(t, st.ActorGradNorm)
	assert.Equal(t, 64, ag.Config().BatchSize)
}

func TestGradClip(t *testing.T) {
	// Adam's first step is scale invariant, so clipping to a tiny norm shows
	// only once steps with different pre-clip norms are combined.
	run := func(opts ...ddpg.Option) (*ddpg.Agent, agent.Stats) {
		ag := newFIRM(t, 1, opts...)
		feed(ag, rand.New(rand.NewPCG(1, 1)), 64, false)
		var st agent.Stats
		for range 20 {
			var err error
			st, err = ag.Update()
			require.NoError(t, err)
		}
		return ag, st
	}
	clipped, st := run(ddpg.WithGradClip(1e-3))
	ref, stRef := run()
	assert.Greater(t, st.CriticGradNorm, 1e-3, "reported norm is before clipping")
	assert.Greater(t, stRef.CriticGradNorm, 1e-3)
	assert.NotEqual(t, ref.Critic().Params().Values(), clipped.Critic().Params().Values())
	assert.NotEqual(t, ref.Actor().Params().Values(), clipped.Actor().Params().Values())
	same, _ := run(ddpg.WithGradClip(1e9)) // never binds
	assert.Equal(t, ref.Critic().Params().Values(), same.Critic().Params().Values())
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ddpg.ckpt")
	ag := newFIRM(t, 1)
	feed(ag, rand.New(rand.NewPCG(1, 1)), 200, true)
	require.NoError(t, ag.SetMultiplier(1.25))
	require.NoError(t, ag.Save(path))

	other := newFIRM(t, 2)
	require.NoError(t, other.Load(path))
	assert.Equal(t, ag.Epsilon(), other.Epsilon())
	assert.Equal(t, 1.25, other.Multiplier(), "the Lagrange multiplier is in the checkpoint")
	assert.Error(t, other.SetMultiplier(-1))
	assert.Error(t, other.SetMultiplier(math.Inf(1)))
	env := rand.New(rand.NewPCG(5, 5))
	s := make([]float64, 9)
	for range 20 {
		for j := range s {
			s[j] = env.Float64()
		}
		assert.Equal(t, ag.Act(make([]float64, 3), s, false), other.Act(make([]float64, 3), s, false))
	}
	st, err := ag.Update()
	require.NoError(t, err)
	assert.Equal(t, 200-63+1, st.Updates, "updates start once a minibatch is stored")

	// Mismatched shapes and corrupt files fail and leave the agent unchanged.
	small := newFIRM(t, 3, ddpg.WithHidden(8))
	w := append([]float64(nil), small.Actor().Params().Values()...)
	err = small.Load(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hidden [40 40]")
	assert.Equal(t, w, small.Actor().Params().Values())

	wide, err := ddpg.New(4, 3, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	require.ErrorContains(t, wide.Load(path), "state 9")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	bad := filepath.Join(dir, "bad.ckpt")
	require.NoError(t, os.WriteFile(bad, data, 0o600))
	require.ErrorContains(t, other.Load(bad), "checksum")
	require.Error(t, other.Load(filepath.Join(dir, "missing")))
}

// Training resumed from a checkpoint continues bit for bit like the
// uninterrupted run, given the same replay contents and random stream: the
// networks, targets, both Adam states and ε are all restored.
func TestSaveLoadResumesTraining(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ddpg.ckpt")
	// feedEnv observes n transitions that depend only on env.
	feedEnv := func(ag *ddpg.Agent, n int, update bool) {
		env := rand.New(rand.NewPCG(3, 3))
		for range n {
			tr := agent.Transition{State: make([]float64, 9), Action: make([]float64, 3), Next: make([]float64, 9), Reward: env.NormFloat64()}
			for j := range 9 {
				tr.State[j], tr.Next[j] = env.Float64(), env.Float64()
			}
			for j := range 3 {
				tr.Action[j] = 2*env.Float64() - 1
			}
			ag.Observe(tr)
			if update {
				_, err := ag.Update()
				require.NoError(t, err)
			}
		}
	}
	pcgA, pcgB := rand.NewPCG(1, 2), rand.NewPCG(5, 6)
	a, err := ddpg.New(9, 3, rand.New(pcgA))
	require.NoError(t, err)
	feedEnv(a, 100, true)
	a.Act(make([]float64, 3), make([]float64, 9), true) // move ε and the rand
	require.NoError(t, a.Save(path))

	b, err := ddpg.New(9, 3, rand.New(pcgB))
	require.NoError(t, err)
	feedEnv(b, 100, false)
	require.NoError(t, b.Load(path))
	state, err := pcgA.MarshalBinary()
	require.NoError(t, err)
	require.NoError(t, pcgB.UnmarshalBinary(state))

	for range 20 {
		sa, err := a.Update()
		require.NoError(t, err)
		sb, err := b.Update()
		require.NoError(t, err)
		assert.Equal(t, sa, sb)
	}
	assert.Equal(t, a.Actor().Params().Values(), b.Actor().Params().Values())
	assert.Equal(t, a.Critic().Params().Values(), b.Critic().Params().Values())
	assert.Equal(t, a.Epsilon(), b.Epsilon())
}

func TestNewInvalid(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	tests := []struct {
		name string
		opts []ddpg.Option
		want string
	}{
		{"hidden", []ddpg.Option{ddpg.WithHidden()}, "no hidden"},
		{"hidden width", []ddpg.Option{ddpg.WithHidden(4, 0)}, "hidden width 0"},
		{"lr", []ddpg.Option{ddpg.WithLearningRates(0, 1)}, "learning rates"},
		{"discount", []ddpg.Option{ddpg.WithDiscount(1.5)}, "discount"},
		{"tau", []ddpg.Option{ddpg.WithTau(0)}, "tau"},
		{"sigma", []ddpg.Option{ddpg.WithGaussianNoise(-1)}, "sigma"},
		{"ou", []ddpg.Option{ddpg.WithOUNoise(0, 0.2)}, "OU theta"},
		{"eps", []ddpg.Option{ddpg.WithEpsilon(0.1, 1e-6, 0.5)}, "epsilon"},
		{"replay", []ddpg.Option{ddpg.WithReplay(0, 64)}, "replay capacity"},
		{"final init", []ddpg.Option{ddpg.WithFinalInit(-1)}, "final init"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ddpg.New(9, 3, rnd, tt.opts...)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := ddpg.New(0, 3, rnd)
	require.Error(t, err)
	_, err = ddpg.New(9, 3, nil)
	require.Error(t, err)
}

func BenchmarkDDPG(b *testing.B) {
	ag := newFIRM(b, 1)
	feed(ag, rand.New(rand.NewPCG(1, 1)), 10_000, false)
	b.Run("firm-9x3/update/batch64", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ag.Update(); err != nil {
				b.Fatal(err)
			}
		}
	})
	s, dst := make([]float64, 9), make([]float64, 3)
	for _, explore := range []bool{false, true} {
		b.Run(fmt.Sprintf("firm-9x3/act/explore=%v", explore), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ag.Act(dst, s, explore)
			}
		})
	}
}

func ExampleNew() {
	ag, _ := ddpg.New(9, 3, rand.New(rand.NewPCG(1, 2)))
	cfg := ag.Config()
	fmt.Println(cfg.Hidden, cfg.ActorLR, cfg.CriticLR, cfg.Discount, cfg.Tau, cfg.NoiseSigma, cfg.ReplayCapacity, cfg.BatchSize)
	a := ag.Act(make([]float64, 3), make([]float64, 9), false)
	fmt.Println(len(a))
	// Output:
	// [40 40] 0.0003 0.003 0.99 0.003 0.2 1000000 64
	// 3
}
