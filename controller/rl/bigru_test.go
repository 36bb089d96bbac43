package rl_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// BenchmarkBiGRU measures the issue's sequence encoder: 2 bidirectional layers
// of 256 units over 20 trajectories of 100 steps of 13 features.
func BenchmarkBiGRU(b *testing.B) {
	const B, T, F, H = 20, 100, 13, 256
	rnd := rand.New(rand.NewPCG(1, 1))
	m, err := rl.NewBiGRU(rl.BiGRUConfig{In: F, Hidden: H, Layers: 2}, rnd)
	if err != nil {
		b.Fatal(err)
	}
	x, y, dy := randVec(rnd, B*T*F), make([]float64, B*T*2*H), randVec(rnd, B*T*2*H)
	name := fmt.Sprintf("2x%d/%dx%dx%d", H, B, T, F)
	b.Run(name+"/forward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Forward(y, x, B, T)
		}
	})
	b.Run(name+"/forward+backward", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Forward(y, x, B, T)
			m.Backward(nil, dy, B, T)
		}
	})
}

// A two-layer BiGRU encodes a batch of two sequences of three 4-feature
// steps into 2×8 features per step.
func ExampleBiGRU() {
	const batch, steps, features = 2, 3, 4
	m, err := rl.NewBiGRU(rl.BiGRUConfig{In: features, Hidden: 4, Layers: 2}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		panic(err)
	}
	x := make([]float64, batch*steps*features) // x[b][t][f], row-major
	for i := range x {
		x[i] = float64(i%7) / 7
	}
	y := make([]float64, batch*steps*m.OutDim())
	m.Forward(y, x, batch, steps)

	dy := make([]float64, len(y)) // gradient of a loss w.r.t. y
	dy[len(dy)-1] = 1
	m.Params().ZeroGrad()
	m.Backward(nil, dy, batch, steps)
	fmt.Println("parameters:", m.Params().Len(), "outputs per step:", m.OutDim())
	fmt.Printf("gradient norm > 0: %v\n", m.Params().GradNorm() > 0)
	// Output:
	// parameters: 576 outputs per step: 8
	// gradient norm > 0: true
}
