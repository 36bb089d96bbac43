package meta

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/rl"
)

func TestSimilarityGrad(t *testing.T) {
	r := rnd(3)
	for _, tc := range []struct {
		name string
		x, y []float64
	}{
		{"random", randSlice(6, r), randSlice(6, r)},
		{"non-negative", []float64{0.3, 0, 1.2, 0.5}, []float64{0.1, 0.7, 0, 0.4}},
		{"close", []float64{1, 2, 3}, []float64{1.01, 1.98, 3.02}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dx, dy := make([]float64, len(tc.x)), make([]float64, len(tc.x))
			SimilarityGrad(dx, dy, tc.x, tc.y)
			requireClose(t, "dS/dx", dx, numGrad(tc.x, func() float64 { return Similarity(tc.x, tc.y) }))
			requireClose(t, "dS/dy", dy, numGrad(tc.y, func() float64 { return Similarity(tc.x, tc.y) }))
		})
	}
	dx, dy := []float64{9, 9}, []float64{9, 9}
	SimilarityGrad(dx, dy, []float64{0, 0}, []float64{0, 0})
	assert.Equal(t, []float64{0, 0}, dx, "two zero embeddings: no gradient, no NaN")
}

func TestInfoNCEGradient(t *testing.T) {
	r := rnd(5)
	const n, d, tau = 4, 5, 0.2
	a, b, da, db := make([][]float64, n), make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for i := range n {
		a[i], b[i], da[i], db[i] = randSlice(d, r), randSlice(d, r), make([]float64, d), make([]float64, d)
	}
	loss := InfoNCE(da, db, a, b, tau)
	assert.Greater(t, loss, 0.0)
	scratchA, scratchB := make([][]float64, n), make([][]float64, n)
	for i := range n {
		scratchA[i], scratchB[i] = make([]float64, d), make([]float64, d)
	}
	f := func() float64 { return InfoNCE(scratchA, scratchB, a, b, tau) }
	for i := range n {
		requireClose(t, fmt.Sprintf("dL/da[%d]", i), da[i], numGrad(a[i], f))
		requireClose(t, fmt.Sprintf("dL/db[%d]", i), db[i], numGrad(b[i], f))
	}

	// Pairs far more alike than the rest: the loss nears zero.
	for i := range n {
		for k := range d {
			a[i][k], b[i][k] = 0, 0
		}
		a[i][i], b[i][i] = 1, 1
	}
	assert.Less(t, InfoNCE(da, db, a, b, 0.05), 1e-3)
}

// ratioEpisode is 6 steps of a task whose first state feature is k times
// its second (the load, drawn per episode): only the ratio, not any level,
// tells the tasks apart, as per-request cost does between applications
// under different load.
func ratioEpisode(k float64, seed uint64) (states, actions [][]float64, rewards []float64) {
	r := rnd(seed)
	load := 0.2 + 0.8*r.Float64()
	for range 6 {
		l := load * (1 + 0.05*r.NormFloat64())
		states = append(states, []float64{k * l, l})
		actions = append(actions, []float64{r.Float64()*2 - 1})
		rewards = append(rewards, 0.5)
	}
	return
}

// TestContrastLearnsToIdentify: eight tasks told apart only by a ratio;
// the identification objective takes nearest-neighbour identification of
// held-out bundles from chance to (nearly) every task.
func TestContrastLearnsToIdentify(t *testing.T) {
	e, err := NewEmbedder(Config{Features: 4, Hidden: 12, Layers: 1, FC: 16, Embed: 8, Output: rl.Tanh}, rnd(21))
	require.NoError(t, err)
	opts := DefaultOptions(6)
	opts.M = 4
	f, err := NewFLASH(e, opts)
	require.NoError(t, err)
	const tasks = 8
	ks := make([]float64, tasks)
	for i := range tasks {
		ks[i] = 0.4 + 0.25*float64(i)
		name := fmt.Sprint("t", i)
		require.NoError(t, f.Register(Task{Name: name, StateDim: 2, ActionDim: 1}))
		for j := range 12 {
			s, a, r := ratioEpisode(ks[i], uint64(100*i+j))
			require.NoError(t, f.Insert(name, s, a, r))
		}
	}
	_, _, err = f.Contrast(rnd(1), DefaultContrast())
	assert.ErrorContains(t, err, "meta updates are off")

	// identify embeds two fresh bundles of 3 episodes per task and
	// returns the share of the second ones whose most similar first one
	// is their own task's.
	identify := func() float64 {
		f.emb.SetTraining(false)
		defer f.emb.SetTraining(f.updates)
		embed := func(k float64, seed uint64) []float64 {
			var trajs []Trajectory
			for j := range 3 {
				s, a, r := ratioEpisode(k, seed+uint64(j))
				var el []float64
				for i := range s {
					el = append(append(append(el, s[i]...), a[i]...), r[i])
				}
				trajs = append(trajs, Trajectory{Elements: el, Steps: len(s)})
			}
			z := make([]float64, 8)
			f.emb.Embed(z, Bundle(nil, trajs, 6, 4), len(trajs), 6)
			return z
		}
		refs, queries := make([][]float64, tasks), make([][]float64, tasks)
		for i, k := range ks {
			refs[i], queries[i] = embed(k, uint64(5000+10*i)), embed(k, uint64(9000+10*i))
		}
		hits := 0
		for i, q := range queries {
			best, bestS := -1, math.Inf(-1)
			for j, r := range refs {
				if s := Similarity(q, r); s > bestS {
					best, bestS = j, s
				}
			}
			if best == i {
				hits++
			}
		}
		return float64(hits) / tasks
	}
	before := identify()

	f.SetMetaUpdates(true)
	cfg := ContrastConfig{Tasks: tasks, Views: 3, Temperature: 0.1, LR: 3e-3}
	r := rnd(2)
	first, used, err := f.Contrast(r, cfg)
	require.NoError(t, err)
	assert.Equal(t, tasks, used)
	var last float64
	for range 300 {
		last, _, err = f.Contrast(r, cfg)
		require.NoError(t, err)
	}
	after := identify()
	t.Logf("identification %.2f → %.2f, loss %.3f → %.3f", before, after, first, last)
	assert.Less(t, last, first/2, "the identification loss falls")
	assert.GreaterOrEqual(t, after, 0.875, "held-out bundles identified after training")
	assert.Greater(t, after, before)

	// Its optimiser state survives a checkpoint: the restored meta learner
	// takes the same next step.
	path := t.TempDir() + "/meta.ckpt"
	require.NoError(t, f.Save(path, nil))
	g, err := NewFLASH(mustEmbedder(t, e.Config()), opts)
	require.NoError(t, err)
	require.NoError(t, g.Load(path, nil))
	require.Len(t, g.contrastOpt, len(f.contrastOpt))
	for _, fl := range []*FLASH{f, g} {
		_, _, err := fl.Contrast(rnd(7), cfg)
		require.NoError(t, err)
	}
	ef, err := f.Embedding(nil, "t0")
	require.NoError(t, err)
	eg, err := g.Embedding(nil, "t0")
	require.NoError(t, err)
	assert.InDeltaSlice(t, ef, eg, 1e-12)
}

func mustEmbedder(t *testing.T, cfg Config) *Embedder {
	t.Helper()
	e, err := NewEmbedder(cfg, rnd(99))
	require.NoError(t, err)
	return e
}
