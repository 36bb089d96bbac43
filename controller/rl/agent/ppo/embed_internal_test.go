package ppo

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/diff/fd"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

// TestEmbeddingGradient checks EmbeddingGrad against central finite
// differences of the clipped surrogate (one epoch, one minibatch of the
// whole rollout, learning rate near zero so the weights stay put) with
// respect to the current task's embedding, for both heads; the other
// task's rows keep theirs.
func TestEmbeddingGradient(t *testing.T) {
	for _, head := range []Head{Continuous, Discrete} {
		t.Run(map[Head]string{Continuous: "continuous", Discrete: "discrete"}[head], func(t *testing.T) {
			const S, E, N = 5, 2, 32
			rnd := rand.New(rand.NewPCG(3, 4))
			opts := []Option{WithEmbedding(E), WithLearningRate(1e-15), WithEpochs(1), WithBatchSize(N), WithRolloutLen(N), WithHidden(8)}
			var a *Agent
			var err error
			if head == Continuous {
				a, err = NewContinuous(S, 2, rnd, opts...)
			} else {
				a, err = NewDiscrete(S, 3, rnd, opts...)
			}
			require.NoError(t, err)
			require.Nil(t, a.EmbeddingGrad(), "before any update")
			require.Error(t, a.SetEmbedding(0, []float64{1}))
			other, emb := []float64{-1.1, 0.5}, []float64{0.4, -0.8}
			require.NoError(t, a.SetEmbedding(1, other))
			require.NoError(t, a.SetEmbedding(0, emb))
			env := rand.New(rand.NewPCG(5, 6))
			s, n := make([]float64, S), make([]float64, S)
			act := make([]float64, a.actionDim)
			for i := range N {
				for j := range s {
					s[j], n[j] = env.NormFloat64(), env.NormFloat64()
				}
				a.Act(act, s, true)
				a.Observe(agent.Transition{State: s, Action: act, Reward: env.NormFloat64(), Next: n, Task: i % 2})
			}
			st, err := a.Update()
			require.NoError(t, err)
			require.True(t, st.Updated)
			got := append([]float64(nil), a.EmbeddingGrad()...)
			require.Len(t, got, E)

			// The minibatch as Update left it: rows, their tasks, old
			// log-probabilities and normalised advantages.
			states := append([]float64(nil), a.mbS[:N*S]...)
			for r := range N {
				want := map[int][]float64{0: emb, 1: other}[a.mbTask[r]]
				require.Equal(t, want, states[r*S+S-E:r*S+S], "row %d trained with its task's embedding", r)
			}
			loss := func(e []float64) float64 {
				x := append([]float64(nil), states...)
				for r := range N {
					if a.mbTask[r] == 0 {
						copy(x[r*S+S-E:r*S+S], e)
					}
				}
				out := make([]float64, N*a.actionDim)
				a.actor.Forward(out, x, N)
				d := make([]float64, N*a.actionDim)
				if head == Discrete {
					surr, ent, _ := categoricalLoss(d, make([]float64, N*a.actionDim), out, a.mbIdx[:N], a.mbOld[:N], a.mbAdv[:N], a.actionDim, a.cfg.Clip, a.cfg.EntropyCoef)
					return surr - a.cfg.EntropyCoef*ent
				}
				surr, _, _ := gaussianLoss(d, make([]float64, a.actionDim), out, a.logStd.Values(), a.mbRaw[:N*a.actionDim], a.mbOld[:N], a.mbAdv[:N], a.cfg.Clip, a.cfg.EntropyCoef)
				return surr // the Gaussian's entropy depends on the log-std only
			}
			want := fd.Gradient(nil, loss, emb, &fd.Settings{Formula: fd.Central, Step: 1e-6})
			for i := range want {
				require.InDelta(t, want[i], got[i], 1e-6*(1+abs(want[i])), "∂loss/∂e[%d]: analytic %v, finite differences %v", i, got[i], want[i])
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
