package ddpg

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

// TestActorGradient checks the actor gradient Update computes — through the
// critic's input gradient, the tanh squash and the squash penalty — against
// central finite differences of the actor loss
// −mean Q(s, tanh(u(s))) + c·mean‖u(s)‖² on the update's own minibatch.
func TestActorGradient(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	// Learning rates of 1e-15 leave the weights where the gradient was taken.
	a, err := New(5, 2, rnd, WithLearningRates(1e-15, 1e-15), WithSquashPenalty(0.05), WithFinalInit(1))
	require.NoError(t, err)
	env := rand.New(rand.NewPCG(5, 6))
	s, n, act := make([]float64, 5), make([]float64, 5), make([]float64, 2)
	for range 200 {
		for i := range s {
			s[i], n[i] = env.NormFloat64(), env.NormFloat64()
		}
		a.Act(act, s, true)
		a.Observe(agent.Transition{State: s, Action: act, Reward: env.Float64(), Next: n})
	}
	_, err = a.Update()
	require.NoError(t, err)
	got := append([]float64(nil), a.actor.Params().Grads()...)

	B, S, A := a.cfg.BatchSize, a.stateDim, a.actionDim
	states := append([]float64(nil), a.batch.States...)
	u, q, x := make([]float64, B*A), make([]float64, B), make([]float64, B*(S+A))
	loss := func() float64 {
		a.actor.Forward(u, states, B)
		mu := make([]float64, len(u))
		var pen float64
		for i, v := range u {
			mu[i] = math.Tanh(v)
			pen += v * v
		}
		rl.ConcatRows(x, states, mu, B, S, A)
		a.critic.Forward(q, x, B)
		var l float64
		for _, v := range q {
			l -= v
		}
		return l/float64(B) + a.cfg.SquashPenalty*pen/float64(B)
	}
	w := a.actor.Params().Values()
	const h = 1e-6
	for _, i := range []int{0, 7, 60, len(w) - 5, len(w) - 1} {
		old := w[i]
		w[i] = old + h
		lp := loss()
		w[i] = old - h
		lm := loss()
		w[i] = old
		want := (lp - lm) / (2 * h)
		require.InDelta(t, want, got[i], 1e-6*math.Max(1, math.Abs(want)), "parameter %d", i)
	}
}
