package meta_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/aware-autoscaler/aware/controller/meta"
)

// A bundle of three 4-step trajectories of [s, a, r] elements, 3 wide,
// embedded by a small network, and compared with itself and with another
// application's bundle.
func Example() {
	rnd := rand.New(rand.NewPCG(1, 2))
	e, err := meta.NewEmbedder(meta.Config{Features: 3, Hidden: 8, Layers: 2, FC: 16, Embed: 4}, rnd)
	if err != nil {
		panic(err)
	}
	e.SetTraining(false) // frozen, as AWARE serves it
	bundle := func(level float64) []float64 {
		b := make([]float64, 3*4*3)
		for i := range b {
			b[i] = level + 0.1*rnd.NormFloat64()
		}
		return b
	}
	a, b := make([]float64, 4), make([]float64, 4)
	e.Embed(a, bundle(1), 3, 4)
	e.Embed(b, bundle(-1), 3, 4)
	fmt.Printf("S(a, a) = %.2f\n", meta.Similarity(a, a))
	fmt.Printf("S(a, b) < 1: %v\n", meta.Similarity(a, b) < 1)
	// Output:
	// S(a, a) = 1.00
	// S(a, b) < 1: true
}
