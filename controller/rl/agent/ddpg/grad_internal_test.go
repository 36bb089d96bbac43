package ddpg

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/diff/fd"

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

	states := append([]float64(nil), a.batch.States...)
	loss := func() float64 { return actorLoss(a, states) }
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

// actorLoss is the actor loss −mean Q(s, tanh(u(s))) + c·mean‖u(s)‖² of a on
// the minibatch states (B×S).
func actorLoss(a *Agent, states []float64) float64 {
	B, S, A := a.cfg.BatchSize, a.stateDim, a.actionDim
	u, q, x := make([]float64, B*A), make([]float64, B), make([]float64, B*(S+A))
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

// TestEmbeddingGradient checks EmbeddingGrad with ActorLoss, the actor
// loss's gradient with respect to the current task's embedding (through the
// critic's state input and through the actor), against central finite
// differences of the actor loss on the update's own minibatch, half of it
// from another task, with the embedding entries of the current task's states
// moved together. This is the DDPG end of the meta learner's joint training
// (controller/meta checks the rest of the path).
func TestEmbeddingGradient(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	const S, E = 5, 2
	a, err := New(S, 2, rnd, WithLearningRates(1e-15, 1e-15), WithSquashPenalty(0.05), WithFinalInit(1), WithEmbedding(E, ActorLoss))
	require.NoError(t, err)
	require.Nil(t, a.EmbeddingGrad(), "before any update")
	require.Error(t, a.SetEmbedding(0, []float64{1}))
	other, emb := []float64{-1.2, 0.4}, []float64{0.3, -0.7}
	require.NoError(t, a.SetEmbedding(1, other))
	require.NoError(t, a.SetEmbedding(0, emb)) // task 0 is the current one
	env := rand.New(rand.NewPCG(9, 10))
	s, n, act := make([]float64, S), make([]float64, S), make([]float64, 2)
	for i := range 200 {
		for i := range s {
			s[i], n[i] = env.NormFloat64(), env.NormFloat64() // recorded with other embeddings
		}
		a.Act(act, s, true)
		a.Observe(agent.Transition{State: s, Action: act, Reward: env.Float64(), Next: n, Task: i % 2})
	}
	_, err = a.Update()
	require.NoError(t, err)
	got := append([]float64(nil), a.EmbeddingGrad()...)
	require.Len(t, got, E)

	B := a.cfg.BatchSize
	states := append([]float64(nil), a.batch.States...)
	for k := range B {
		want := map[int][]float64{0: emb, 1: other}[a.batch.Tasks[k]]
		require.Equal(t, want, states[k*S+S-E:k*S+S], "sample %d trained with its task's embedding", k)
	}
	loss := func(e []float64) float64 {
		for k := range B {
			if a.batch.Tasks[k] == 0 { // the gradient is the current task's
				copy(states[k*S+S-E:k*S+S], e)
			}
		}
		return actorLoss(a, states)
	}
	requireEmbeddingGrad(t, got, loss, emb)
}

// TestCriticEmbeddingGradient checks EmbeddingGrad with CriticLoss (the
// default): the gradient of the critic's TD loss mean (Q(s, a) − y)², the
// target y held fixed (semi-gradient), with respect to the current task's
// embedding, against central finite differences.
func TestCriticEmbeddingGradient(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 12))
	const S, E, A = 5, 2, 2
	a, err := New(S, A, rnd, WithLearningRates(1e-15, 1e-15), WithFinalInit(1), WithEmbedding(E, CriticLoss))
	require.NoError(t, err)
	emb := []float64{-0.4, 0.9}
	require.NoError(t, a.SetEmbedding(3, emb))
	env := rand.New(rand.NewPCG(13, 14))
	s, n, act := make([]float64, S), make([]float64, S), make([]float64, A)
	for range 200 {
		for i := range s {
			s[i], n[i] = env.NormFloat64(), env.NormFloat64()
		}
		a.Act(act, s, true)
		a.Observe(agent.Transition{State: s, Action: act, Reward: env.Float64(), Next: n, Task: 3})
	}
	_, err = a.Update()
	require.NoError(t, err)
	got := append([]float64(nil), a.EmbeddingGrad()...)

	B := a.cfg.BatchSize
	bt := a.batch
	// y from the target networks on the update's own next states.
	nextA, xn, qn := make([]float64, B*A), make([]float64, B*(S+A)), make([]float64, B)
	a.actorTarget.Forward(nextA, bt.Next, B)
	squash(nextA)
	rl.ConcatRows(xn, bt.Next, nextA, B, S, A)
	a.criticTarget.Forward(qn, xn, B)
	y := make([]float64, B)
	for k := range B {
		y[k] = bt.Rewards[k] + a.cfg.Discount*(1-bt.Done[k])*qn[k]
	}
	states := append([]float64(nil), bt.States...)
	x, q := make([]float64, B*(S+A)), make([]float64, B)
	loss := func(e []float64) float64 {
		for k := range B {
			copy(states[k*S+S-E:k*S+S], e)
		}
		rl.ConcatRows(x, states, bt.Actions, B, S, A)
		a.critic.Forward(q, x, B)
		var l float64
		for k := range B {
			d := q[k] - y[k]
			l += d * d
		}
		return l / float64(B)
	}
	requireEmbeddingGrad(t, got, loss, emb)
}

// requireEmbeddingGrad compares got with the central finite-difference
// gradient of loss at emb.
func requireEmbeddingGrad(t *testing.T, got []float64, loss func([]float64) float64, emb []float64) {
	t.Helper()
	want := fd.Gradient(nil, loss, emb, &fd.Settings{Formula: fd.Central, Step: 1e-6})
	for j := range want {
		require.InDelta(t, want[j], got[j], 1e-6*math.Max(1, math.Abs(want[j])), "embedding entry %d", j)
	}
}
