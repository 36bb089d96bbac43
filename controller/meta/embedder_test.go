package meta

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/diff/fd"

	"github.com/aware-autoscaler/aware/controller/rl"
)

func rnd(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func randSlice(n int, r *rand.Rand) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.NormFloat64()
	}
	return s
}

// ddpgPath is the whole path of acceptance point 1: a bundle → BiGRU →
// mean → FC → embedding, concatenated to each state of a minibatch; the
// actor maps [s, e] to an action, the critic [s, a, e] to Q; the actor loss
// is −mean Q and the critic loss the mean squared error against fixed
// targets.
type ddpgPath struct {
	emb            *Embedder
	actor, critic  *rl.MLP
	bundle         []float64
	m, t, sDim, aD int
	states, target []float64
	batch          int
}

func newDDPGPath(t *testing.T) *ddpgPath {
	r := rnd(7)
	cfg := Config{Features: 4, Hidden: 3, Layers: 2, FC: 5, Embed: 3, Dropout: 0.05}
	e, err := NewEmbedder(cfg, r)
	require.NoError(t, err)
	e.SetTraining(false) // dropout's mask would change between the finite differences
	p := &ddpgPath{emb: e, m: 3, t: 4, sDim: 2, aD: 1, batch: 5}
	p.actor, err = rl.NewMLP(rl.MLPConfig{Sizes: []int{p.sDim + cfg.Embed, 6, p.aD}, Hidden: rl.Tanh, Output: rl.Tanh}, r)
	require.NoError(t, err)
	p.critic, err = rl.NewMLP(rl.MLPConfig{Sizes: []int{p.sDim + p.aD + cfg.Embed, 6, 1}, Hidden: rl.Tanh, Output: rl.Identity}, r)
	require.NoError(t, err)
	p.bundle = randSlice(p.m*p.t*cfg.Features, r)
	p.states = randSlice(p.batch*p.sDim, r)
	p.target = randSlice(p.batch, r)
	// The embedding's ReLUs must not sit at their kink for finite
	// differences: shift the head's biases up so every unit is active.
	for _, v := range [][]float64{e.head.Layers()[0].Bias(), e.head.Layers()[1].Bias()} {
		for i := range v {
			v[i] = 0.5
		}
	}
	return p
}

// loss runs the whole path and returns the actor loss plus the critic loss;
// with grad it back-propagates both into every network and the bundle.
func (p *ddpgPath) loss(grad bool, dBundle []float64) float64 {
	E := p.emb.cfg.Embed
	e := make([]float64, E)
	p.emb.Embed(e, p.bundle, p.m, p.t)
	B := p.batch
	xa := make([]float64, B*(p.sDim+E))
	for b := range B {
		copy(xa[b*(p.sDim+E):], p.states[b*p.sDim:(b+1)*p.sDim])
		copy(xa[b*(p.sDim+E)+p.sDim:], e)
	}
	a := make([]float64, B*p.aD)
	p.actor.Forward(a, xa, B)
	w := p.sDim + p.aD + E
	xc := make([]float64, B*w)
	for b := range B {
		copy(xc[b*w:], p.states[b*p.sDim:(b+1)*p.sDim])
		copy(xc[b*w+p.sDim:], a[b*p.aD:(b+1)*p.aD])
		copy(xc[b*w+p.sDim+p.aD:], e)
	}
	q := make([]float64, B)
	p.critic.Forward(q, xc, B)
	var actorLoss, criticLoss float64
	for b := range B {
		actorLoss -= q[b] / float64(B)
		d := q[b] - p.target[b]
		criticLoss += d * d / float64(B)
	}
	if !grad {
		return actorLoss + criticLoss
	}
	// dL/dq = −1/B (actor) + 2(q−y)/B (critic). The critic's parameters get
	// both; its input gradient carries both into a and e.
	dq := make([]float64, B)
	for b := range B {
		dq[b] = -1/float64(B) + 2*(q[b]-p.target[b])/float64(B)
	}
	dxc := make([]float64, B*w)
	p.critic.Backward(dxc, dq, B)
	da := make([]float64, B*p.aD)
	de := make([]float64, E)
	for b := range B {
		copy(da[b*p.aD:], dxc[b*w+p.sDim:b*w+p.sDim+p.aD])
		for j := range E {
			de[j] += dxc[b*w+p.sDim+p.aD+j]
		}
	}
	dxa := make([]float64, B*(p.sDim+E))
	p.actor.Backward(dxa, da, B)
	for b := range B {
		for j := range E {
			de[j] += dxa[b*(p.sDim+E)+p.sDim+j]
		}
	}
	// Two AddGrad calls, as two updates of one episode would make.
	half := make([]float64, E)
	for j := range E {
		half[j] = de[j] / 2
	}
	p.emb.AddGrad(half)
	p.emb.AddGrad(half)
	p.emb.Backward(dBundle)
	return actorLoss + criticLoss
}

// numGrad is the central finite-difference gradient of f with respect to
// v (values read by f in place), v restored afterwards.
func numGrad(v []float64, f func() float64) []float64 {
	orig := slices.Clone(v)
	g := fd.Gradient(nil, func(x []float64) float64 {
		copy(v, x)
		return f()
	}, orig, &fd.Settings{Formula: fd.Central, Step: 1e-6})
	copy(v, orig)
	return g
}

func requireClose(t *testing.T, what string, analytic, numeric []float64) {
	t.Helper()
	require.Len(t, analytic, len(numeric))
	for i := range analytic {
		tol := 1e-6 + 1e-4*math.Abs(numeric[i])
		require.InDelta(t, numeric[i], analytic[i], tol, "%s[%d]: analytic %g, numeric %g", what, i, analytic[i], numeric[i])
	}
}

// TestWholePathGradients checks acceptance point 1 of the AWARE core: the
// gradient of the DDPG actor and critic losses with respect to the meta
// learner's parameters and to the trajectory bundle, back-propagated through
// the embedding, matches finite differences.
func TestWholePathGradients(t *testing.T) {
	p := newDDPGPath(t)
	p.emb.ZeroGrad()
	p.actor.Params().ZeroGrad()
	p.critic.Params().ZeroGrad()
	dBundle := make([]float64, len(p.bundle))
	p.loss(true, dBundle)
	f := func() float64 { return p.loss(false, nil) }
	for i, ps := range p.emb.Params() {
		analytic := append([]float64(nil), ps.Grads()...)
		requireClose(t, []string{"BiGRU", "head"}[i], analytic, numGrad(ps.Values(), f))
	}
	requireClose(t, "bundle", dBundle, numGrad(p.bundle, f))
	requireClose(t, "actor", append([]float64(nil), p.actor.Params().Grads()...), numGrad(p.actor.Params().Values(), f))
}

func TestEmbedderShapesAndErrors(t *testing.T) {
	_, err := NewEmbedder(Config{Features: 0, Hidden: 2, Layers: 1, FC: 2, Embed: 2}, rnd(1))
	assert.ErrorContains(t, err, "features 0")
	_, err = NewEmbedder(Config{Features: 2, Hidden: 2, Layers: 1, FC: 2, Embed: 2, Dropout: 1}, rnd(1))
	assert.ErrorContains(t, err, "dropout 1")
	_, err = NewEmbedder(DefaultConfig(3), nil)
	assert.ErrorContains(t, err, "nil random source")

	e, err := NewEmbedder(Config{Features: 2, Hidden: 3, Layers: 1, FC: 4, Embed: 2}, rnd(1))
	require.NoError(t, err)
	dst := make([]float64, 2)
	assert.PanicsWithValue(t, "meta: Embed: bundle has 3 values, want 1×2×2", func() { e.Embed(dst, make([]float64, 3), 1, 2) })
	assert.Panics(t, func() { e.AddGrad([]float64{1, 2}) }, "AddGrad before Embed")
	assert.False(t, e.Backward(nil), "nothing to back-propagate")
	e.Embed(dst, randSlice(4, rnd(2)), 1, 2)
	assert.False(t, e.Backward(nil), "Embed alone leaves nothing to back-propagate")
	e.AddGrad([]float64{1, 1})
	assert.True(t, e.Backward(nil))
	assert.False(t, e.Backward(nil), "Backward clears the accumulated gradient")
}

// TestEmbeddingIsMeanOverTrajectories: the embedding of a bundle does not
// depend on the order of its trajectories, and a bundle of one trajectory
// repeated embeds like the trajectory alone.
func TestEmbeddingIsMeanOverTrajectories(t *testing.T) {
	e, err := NewEmbedder(Config{Features: 3, Hidden: 4, Layers: 2, FC: 5, Embed: 4}, rnd(3))
	require.NoError(t, err)
	r := rnd(4)
	a, b := randSlice(5*3, r), randSlice(5*3, r)
	ab := append(append([]float64(nil), a...), b...)
	ba := append(append([]float64(nil), b...), a...)
	aa := append(append([]float64(nil), a...), a...)
	e1, e2, e3, e4 := make([]float64, 4), make([]float64, 4), make([]float64, 4), make([]float64, 4)
	e.Embed(e1, ab, 2, 5)
	e.Embed(e2, ba, 2, 5)
	e.Embed(e3, aa, 2, 5)
	e.Embed(e4, a, 1, 5)
	assert.InDeltaSlice(t, e1, e2, 1e-12)
	assert.InDeltaSlice(t, e3, e4, 1e-12)
}

// TestEmbedBatch: bundles embedded in one batch get the embeddings they get
// one at a time, and the batch's input gradient matches finite differences.
func TestEmbedBatch(t *testing.T) {
	r := rnd(8)
	e, err := NewEmbedder(Config{Features: 3, Hidden: 4, Layers: 2, FC: 5, Embed: 3, Output: rl.Tanh}, r)
	require.NoError(t, err)
	sizes, steps, w := []int{2, 1, 3}, 4, 3
	bundle := randSlice(6*steps*w, r)
	got := make([]float64, len(sizes)*3)
	e.EmbedBatch(got, bundle, sizes, steps)
	off := 0
	for k, m := range sizes {
		one := make([]float64, 3)
		e.Embed(one, bundle[off*steps*w:(off+m)*steps*w], m, steps)
		assert.InDeltaSlice(t, one, got[k*3:(k+1)*3], 1e-12, "bundle %d", k)
		off += m
	}

	c := randSlice(len(got), r)
	loss := func() float64 {
		z := make([]float64, len(got))
		e.EmbedBatch(z, bundle, sizes, steps)
		s := 0.0
		for i := range z {
			s += c[i] * z[i]
		}
		return s
	}
	loss()
	e.AddGrad(c)
	dx := make([]float64, len(bundle))
	require.True(t, e.Backward(dx))
	requireClose(t, "dL/dbundle", dx, numGrad(bundle, loss))
	assert.Panics(t, func() { e.EmbedBatch(got, bundle, []int{2, 0, 4}, steps) }, "an empty bundle")
}
