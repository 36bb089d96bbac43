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
