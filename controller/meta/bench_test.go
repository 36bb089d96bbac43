package meta

import (
	"fmt"
	"testing"

	"github.com/aware-autoscaler/aware/gym"
)

// BenchmarkEmbedder measures one episode's meta-learner work at the
// default shape (2 × 256 BiGRU, features of [s, a, r]): embedding a bundle
// of m trajectories of 100 steps, and embedding plus the one backward pass
// joint training makes per episode. The figure bounds what meta-training
// the pool costs: one embedding and backward pass per application per
// round.
func BenchmarkEmbedder(b *testing.B) {
	const steps = 100
	features := gym.StateDim + gym.ActDim + 1
	for _, m := range []int{4, 20} {
		e, err := NewEmbedder(DefaultConfig(features), rnd(1))
		if err != nil {
			b.Fatal(err)
		}
		bundle := randSlice(m*steps*features, rnd(2))
		emb := make([]float64, e.Config().Embed)
		grad := randSlice(e.Config().Embed, rnd(3))
		b.Run(fmt.Sprintf("embed/m=%d", m), func(b *testing.B) {
			for b.Loop() {
				e.Embed(emb, bundle, m, steps)
			}
		})
		b.Run(fmt.Sprintf("embed+backward/m=%d", m), func(b *testing.B) {
			for b.Loop() {
				e.Embed(emb, bundle, m, steps)
				e.AddGrad(grad)
				e.Backward(nil)
			}
		})
	}
}

// BenchmarkContrast measures one step of the identification objective at
// the default shape and DefaultContrast's batch: 16 applications, two
// views each of v trajectories of 100 steps, embedded in one batch,
// back-propagated once.
func BenchmarkContrast(b *testing.B) {
	const steps = 100
	features := gym.StateDim + gym.ActDim + 1
	for _, v := range []int{1, 4} {
		e, err := NewEmbedder(DefaultConfig(features), rnd(1))
		if err != nil {
			b.Fatal(err)
		}
		opts := DefaultOptions(steps)
		f, err := NewFLASH(e, opts)
		if err != nil {
			b.Fatal(err)
		}
		cfg := DefaultContrast()
		cfg.Views = v
		r := rnd(4)
		for i := range cfg.Tasks {
			name := fmt.Sprint("app-", i)
			if err := f.Register(Task{Name: name, StateDim: gym.StateDim, ActionDim: gym.ActDim}); err != nil {
				b.Fatal(err)
			}
			for range 2 * v {
				states, actions, rewards := make([][]float64, steps), make([][]float64, steps), make([]float64, steps)
				for s := range steps {
					states[s], actions[s], rewards[s] = randSlice(gym.StateDim, r), randSlice(gym.ActDim, r), r.Float64()
				}
				if err := f.Insert(name, states, actions, rewards); err != nil {
					b.Fatal(err)
				}
			}
		}
		f.SetMetaUpdates(true)
		b.Run(fmt.Sprintf("views=%d", v), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := f.Contrast(r, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFrozenEmbedding measures what an adapting learner asks of a
// frozen meta learner after each episode at the default shape: insert the
// episode (100 steps) and embed the bundle of M = 20 its buffer selects.
// "summaries" is FLASH, which runs only the new trajectory through the
// BiGRU; "whole-bundle" embeds all 20 again, as FLASH did before.
func BenchmarkFrozenEmbedding(b *testing.B) {
	const steps = 100
	features := gym.StateDim + gym.ActDim + 1
	e, err := NewEmbedder(DefaultConfig(features), rnd(1))
	if err != nil {
		b.Fatal(err)
	}
	f, err := NewFLASH(e, DefaultOptions(steps))
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Register(Task{Name: "app", StateDim: gym.StateDim, ActionDim: gym.ActDim}); err != nil {
		b.Fatal(err)
	}
	r := rnd(2)
	states, actions, rewards := make([][]float64, steps), make([][]float64, steps), make([]float64, steps)
	insert := func() {
		for s := range steps {
			states[s], actions[s], rewards[s] = randSlice(gym.StateDim, r), randSlice(gym.ActDim, r), r.Float64()
		}
		if err := f.Insert("app", states, actions, rewards); err != nil {
			b.Fatal(err)
		}
	}
	var emb []float64
	for range 24 {
		insert()
		if emb, err = f.Embedding(emb, "app"); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("summaries", func(b *testing.B) {
		for b.Loop() {
			insert()
			if emb, err = f.Embedding(emb, "app"); err != nil {
				b.Fatal(err)
			}
		}
	})
	var bundle []float64
	b.Run("whole-bundle", func(b *testing.B) {
		for b.Loop() {
			insert()
			trajs := f.tasks["app"].buf.Select(f.opts.M, f.opts.Selection, f.opts.SkipEpisodes)
			bundle = Bundle(bundle, trajs, steps, features)
			e.Embed(emb, bundle, len(trajs), steps)
		}
	})
}
