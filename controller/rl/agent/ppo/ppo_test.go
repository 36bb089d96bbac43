package ppo_test

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
	"github.com/aware-autoscaler/aware/controller/rl/agent/ppo"
)

// banditReward: action 0 is best for s > 0, action 2 for s < 0; action 1 is a
// safe 0.3 everywhere.
func banditReward(s float64, k int) float64 {
	switch {
	case k == 1:
		return 0.3
	case (k == 0) == (s > 0):
		return 1
	}
	return 0
}

// trainBandit runs steps one-step episodes, calling Update after each.
func trainBandit(t testing.TB, ag *ppo.Agent, env *rand.Rand, steps int) {
	t.Helper()
	s, a := make([]float64, 1), make([]float64, 3)
	for range steps {
		s[0] = 2*env.Float64() - 1
		ag.Act(a, s, true)
		ag.Observe(agent.Transition{State: s, Action: a, Reward: banditReward(s[0], ppo.Index(a)), Next: s, Done: true})
		_, err := ag.Update()
		require.NoError(t, err)
	}
}

// evalBandit returns the greedy policy's mean reward over a grid of states.
func evalBandit(ag *ppo.Agent) float64 {
	s, a := make([]float64, 1), make([]float64, 3)
	var sum float64
	const n = 40
	for i := range n {
		s[0] = -1 + 2*(float64(i)+0.5)/n
		sum += banditReward(s[0], ppo.Index(ag.Act(a, s, false)))
	}
	return sum / n
}

func toyReward(s, a float64) float64 { d := a - 0.5*s; return -d * d }

func trainToy(t testing.TB, ag *ppo.Agent, env *rand.Rand, steps int) {
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

func evalToy(ag *ppo.Agent) float64 {
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

func TestDiscreteLearnsBandit(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		ag, err := ppo.NewDiscrete(1, 3, rand.New(rand.NewPCG(seed, 7)))
		require.NoError(t, err)
		before := evalBandit(ag)
		trainBandit(t, ag, rand.New(rand.NewPCG(seed, 8)), 5000)
		after := evalBandit(ag)
		t.Logf("seed %d: greedy mean reward %.3f → %.3f", seed, before, after)
		assert.Less(t, before, 0.8, "seed %d: untrained policy is poor", seed)
		assert.Greater(t, after, 0.95, "seed %d: learnt policy is near optimal", seed)
	}
}

func TestContinuousLearnsToy(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		// σ starts at e^−1: with σ ≈ 1 most samples are clipped and the
		// clipped objective pushes the mean out of the bounds at first.
		ag, err := ppo.NewContinuous(1, 1, rand.New(rand.NewPCG(seed, 7)), ppo.WithInitLogStd(-1))
		require.NoError(t, err)
		before := evalToy(ag)
		trainToy(t, ag, rand.New(rand.NewPCG(seed, 8)), 5000)
		after := evalToy(ag)
		t.Logf("seed %d: mean reward %.5f → %.5f, log-std %v", seed, before, after, ag.LogStd())
		assert.Less(t, before, -0.05, "seed %d: untrained policy is poor", seed)
		assert.Greater(t, after, -0.005, "seed %d: learnt policy is near optimal", seed)
	}
}

// The toy tests can fail: a policy that barely learns stays poor.
func TestToyTasksNegativeControl(t *testing.T) {
	d, err := ppo.NewDiscrete(1, 3, rand.New(rand.NewPCG(1, 7)), ppo.WithLearningRate(1e-9))
	require.NoError(t, err)
	trainBandit(t, d, rand.New(rand.NewPCG(1, 8)), 2000)
	assert.Less(t, evalBandit(d), 0.8)
	c, err := ppo.NewContinuous(1, 1, rand.New(rand.NewPCG(1, 7)), ppo.WithLearningRate(1e-9), ppo.WithInitLogStd(-1))
	require.NoError(t, err)
	trainToy(t, c, rand.New(rand.NewPCG(1, 8)), 2000)
	assert.Less(t, evalToy(c), -0.05)
}

// newAWARE returns an agent with the artifact's shapes: 9 state features and
// the 7 moves, or a 3-D continuous action.
func newAWARE(t testing.TB, head ppo.Head, seed uint64, opts ...ppo.Option) *ppo.Agent {
	t.Helper()
	var ag *ppo.Agent
	var err error
	if head == ppo.Discrete {
		ag, err = ppo.NewDiscrete(9, 7, rand.New(rand.NewPCG(seed, seed+1)), opts...)
	} else {
		ag, err = ppo.NewContinuous(9, 3, rand.New(rand.NewPCG(seed, seed+1)), opts...)
	}
	require.NoError(t, err)
	return ag
}

func actionDim(ag *ppo.Agent) int {
	if ag.Head() == ppo.Discrete {
		return 7
	}
	return 3
}

// feed observes n transitions of 100-step episodes with states drawn from
// env, acting with exploration, and updates after each when update is set.
func feed(t testing.TB, ag *ppo.Agent, env *rand.Rand, n int, update bool) {
	s, next, a := make([]float64, 9), make([]float64, 9), make([]float64, actionDim(ag))
	for j := range s {
		s[j] = env.Float64()
	}
	for i := range n {
		for j := range next {
			next[j] = env.Float64()
		}
		ag.Act(a, s, true)
		ag.Observe(agent.Transition{State: s, Action: a, Reward: env.NormFloat64() + s[0], Next: next, Done: i%100 == 99})
		copy(s, next)
		if update {
			_, err := ag.Update()
			require.NoError(t, err)
		}
	}
}

var heads = []ppo.Head{ppo.Discrete, ppo.Continuous}

func TestSameSeedSameWeights(t *testing.T) {
	for _, h := range heads {
		t.Run(h.String(), func(t *testing.T) {
			run := func(seed uint64) *ppo.Agent {
				ag := newAWARE(t, h, seed)
				feed(t, ag, rand.New(rand.NewPCG(9, 9)), 300, true)
				return ag
			}
			a, b, c := run(1), run(1), run(2)
			assert.Equal(t, a.Actor().Params().Values(), b.Actor().Params().Values())
			assert.Equal(t, a.Critic().Params().Values(), b.Critic().Params().Values())
			assert.Equal(t, a.LogStd(), b.LogStd())
			assert.NotEqual(t, a.Actor().Params().Values(), c.Actor().Params().Values())
		})
	}
}

func TestActGreedyIsDeterministic(t *testing.T) {
	s := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	for _, h := range heads {
		t.Run(h.String(), func(t *testing.T) {
			ag := newAWARE(t, h, 1)
			feed(t, ag, rand.New(rand.NewPCG(1, 1)), 200, true)
			n := actionDim(ag)
			want := ag.Act(make([]float64, n), s, false)
			for range 5 {
				assert.Equal(t, want, ag.Act(make([]float64, n), s, false))
			}
			mean := make([]float64, n)
			ag.Actor().Forward(mean, s, 1)
			if h == ppo.Discrete {
				assert.Equal(t, ppo.Index(mean), ppo.Index(want), "greedy is the argmax")
				var ones float64
				for _, v := range want {
					ones += v
				}
				assert.Equal(t, 1.0, ones, "one-hot")
			} else {
				for i := range mean {
					assert.Equal(t, max(-1, min(1, mean[i])), want[i], "greedy is the clipped mean")
				}
			}
			differs := false
			for range 20 {
				noisy := ag.Act(make([]float64, n), s, true)
				differs = differs || fmt.Sprint(noisy) != fmt.Sprint(want)
				for _, v := range noisy {
					assert.True(t, v >= -1 && v <= 1)
				}
			}
			assert.True(t, differs, "exploring acts sample")
			dst := make([]float64, n)
			assert.Zero(t, testing.AllocsPerRun(100, func() { ag.Act(dst, s, true) }))
		})
	}
}

func TestUpdateNeedsFullRollout(t *testing.T) {
	for _, h := range heads {
		t.Run(h.String(), func(t *testing.T) {
			ag := newAWARE(t, h, 1, ppo.WithRolloutLen(50))
			feed(t, ag, rand.New(rand.NewPCG(1, 1)), 49, false)
			st, err := ag.Update()
			require.NoError(t, err)
			assert.False(t, st.Updated)
			assert.Equal(t, 49, st.Steps)
			assert.Equal(t, 49, ag.Stored())
			feed(t, ag, rand.New(rand.NewPCG(1, 2)), 1, false)
			st, err = ag.Update()
			require.NoError(t, err)
			assert.True(t, st.Updated)
			assert.Equal(t, 1, st.Updates)
			assert.Zero(t, ag.Stored(), "the rollout is consumed")
			assert.Positive(t, st.CriticLoss)
			assert.Positive(t, st.Entropy)
			assert.Positive(t, st.ActorGradNorm)
			assert.Positive(t, st.CriticGradNorm)
			st, err = ag.Update()
			require.NoError(t, err)
			assert.False(t, st.Updated)
		})
	}
}

func TestSaveLoad(t *testing.T) {
	for _, h := range heads {
		t.Run(h.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ppo.ckpt")
			ag := newAWARE(t, h, 1)
			feed(t, ag, rand.New(rand.NewPCG(1, 1)), 250, true)
			require.NoError(t, ag.SetMultiplier(0.75))
			require.NoError(t, ag.Save(path))

			other := newAWARE(t, h, 2)
			feed(t, other, rand.New(rand.NewPCG(1, 1)), 30, false)
			require.NoError(t, other.Load(path))
			assert.Equal(t, 0.75, other.Multiplier(), "the Lagrange multiplier is in the checkpoint")
			assert.Error(t, other.SetMultiplier(math.NaN()))
			assert.Zero(t, other.Stored(), "Load discards the rollout")
			assert.Equal(t, ag.LogStd(), other.LogStd())
			env := rand.New(rand.NewPCG(5, 5))
			s, n := make([]float64, 9), actionDim(ag)
			for range 20 {
				for j := range s {
					s[j] = env.Float64()
				}
				assert.Equal(t, ag.Act(make([]float64, n), s, false), other.Act(make([]float64, n), s, false))
			}
			// Mismatched shapes, heads and corrupt files fail and leave the agent unchanged.
			small := newAWARE(t, h, 3, ppo.WithHidden(8))
			w := append([]float64(nil), small.Actor().Params().Values()...)
			err := small.Load(path)
			require.ErrorContains(t, err, "hidden [64 64]")
			assert.Equal(t, w, small.Actor().Params().Values())
			otherHead := ppo.Continuous
			if h == ppo.Continuous {
				otherHead = ppo.Discrete
			}
			require.ErrorContains(t, newAWARE(t, otherHead, 1).Load(path), "checkpoint is ppo "+h.String())

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			data[len(data)/2] ^= 0xff
			bad := filepath.Join(dir, "bad.ckpt")
			require.NoError(t, os.WriteFile(bad, data, 0o600))
			require.ErrorContains(t, other.Load(bad), "checksum")
			require.Error(t, other.Load(filepath.Join(dir, "missing")))
		})
	}
}

// Training resumed from a checkpoint continues bit for bit like the
// uninterrupted run, given the same rollout and random stream: the networks,
// the log-std and all Adam states are restored.
func TestSaveLoadResumesTraining(t *testing.T) {
	for _, h := range heads {
		t.Run(h.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ppo.ckpt")
			pcgA, pcgB := rand.NewPCG(1, 2), rand.NewPCG(5, 6)
			mk := func(p *rand.PCG) *ppo.Agent {
				if h == ppo.Discrete {
					ag, err := ppo.NewDiscrete(9, 7, rand.New(p))
					require.NoError(t, err)
					return ag
				}
				ag, err := ppo.NewContinuous(9, 3, rand.New(p))
				require.NoError(t, err)
				return ag
			}
			a := mk(pcgA)
			feed(t, a, rand.New(rand.NewPCG(3, 3)), 300, true)
			require.NoError(t, a.Save(path))
			b := mk(pcgB)
			require.NoError(t, b.Load(path))
			state, err := pcgA.MarshalBinary()
			require.NoError(t, err)
			require.NoError(t, pcgB.UnmarshalBinary(state))
			for range 3 {
				env := rand.New(rand.NewPCG(4, 4))
				feed(t, a, env, 100, false)
				env = rand.New(rand.NewPCG(4, 4))
				feed(t, b, env, 100, false)
				sa, err := a.Update()
				require.NoError(t, err)
				sb, err := b.Update()
				require.NoError(t, err)
				require.True(t, sa.Updated)
				assert.Equal(t, sa, sb)
			}
			assert.Equal(t, a.Actor().Params().Values(), b.Actor().Params().Values())
			assert.Equal(t, a.Critic().Params().Values(), b.Critic().Params().Values())
			assert.Equal(t, a.LogStd(), b.LogStd())
		})
	}
}

func TestNewInvalid(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	tests := []struct {
		name string
		opts []ppo.Option
		want string
	}{
		{"hidden", []ppo.Option{ppo.WithHidden()}, "no hidden"},
		{"hidden width", []ppo.Option{ppo.WithHidden(4, 0)}, "hidden width 0"},
		{"lr", []ppo.Option{ppo.WithLearningRate(0)}, "learning rate"},
		{"discount", []ppo.Option{ppo.WithDiscount(1.5)}, "discount"},
		{"lambda", []ppo.Option{ppo.WithGAELambda(-0.1)}, "lambda"},
		{"epochs", []ppo.Option{ppo.WithEpochs(0)}, "epochs"},
		{"batch", []ppo.Option{ppo.WithBatchSize(0)}, "batch size"},
		{"rollout", []ppo.Option{ppo.WithRolloutLen(0)}, "rollout length"},
		{"clip", []ppo.Option{ppo.WithClip(0)}, "clip range"},
		{"coefficients", []ppo.Option{ppo.WithCoefficients(-1, 0.5)}, "entropy coefficient"},
		{"log-std", []ppo.Option{ppo.WithInitLogStd(10)}, "log-std"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ppo.NewContinuous(9, 3, rnd, tt.opts...)
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := ppo.NewDiscrete(9, 1, rnd)
	require.ErrorContains(t, err, "at least 2 actions")
	_, err = ppo.NewContinuous(0, 3, rnd)
	require.Error(t, err)
	_, err = ppo.NewDiscrete(9, 7, nil)
	require.Error(t, err)
}

func BenchmarkPPO(b *testing.B) {
	for _, h := range heads {
		ag := newAWARE(b, h, 1)
		n := actionDim(ag)
		// One 100-step rollout, replayed each iteration.
		env := rand.New(rand.NewPCG(1, 1))
		rollout := make([]agent.Transition, 100)
		for i := range rollout {
			tr := agent.Transition{State: make([]float64, 9), Next: make([]float64, 9), Action: make([]float64, n), Reward: env.NormFloat64(), Done: i == 99}
			for j := range 9 {
				tr.State[j], tr.Next[j] = env.Float64(), env.Float64()
			}
			ag.Act(tr.Action, tr.State, true)
			rollout[i] = tr
		}
		name := fmt.Sprintf("%s-9x%d", h, n)
		b.Run(name+"/update/rollout100-batch64-epochs5", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, tr := range rollout {
					ag.Observe(tr)
				}
				if st, err := ag.Update(); err != nil || !st.Updated {
					b.Fatal(st, err)
				}
			}
		})
		s, dst := make([]float64, 9), make([]float64, n)
		for _, explore := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/act/explore=%v", name, explore), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					ag.Act(dst, s, explore)
				}
			})
		}
	}
}

func ExampleNewDiscrete() {
	ag, _ := ppo.NewDiscrete(9, 7, rand.New(rand.NewPCG(1, 2)))
	cfg := ag.Config()
	fmt.Println(cfg.Hidden, cfg.LR, cfg.Discount, cfg.Lambda, cfg.Epochs, cfg.Clip, cfg.EntropyCoef, cfg.ValueCoef, cfg.BatchSize, cfg.RolloutLen)
	a := ag.Act(make([]float64, 7), make([]float64, 9), false)
	fmt.Println(len(a), ppo.Index(a) >= 0 && ppo.Index(a) < 7)
	// Output:
	// [64 64] 0.0003 0.99 0.95 5 0.2 0.01 0.5 64 100
	// 7 true
}
