package rl_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aware-autoscaler/aware/controller/rl"
)

var benchNets = []struct {
	name   string
	sizes  []int
	output rl.Activation
}{
	{"firm-actor-9-40-40-3", []int{9, 40, 40, 3}, rl.Tanh},
	{"firm-critic-12-40-40-1", []int{12, 40, 40, 1}, rl.Identity},
	{"64-64-12-64-64-1", []int{12, 64, 64, 1}, rl.Identity},
}

func benchMLP(b *testing.B, sizes []int, out rl.Activation) *rl.MLP {
	b.Helper()
	m, err := rl.NewMLP(rl.MLPConfig{Sizes: sizes, Hidden: rl.ReLU, Output: out, FinalInit: 3e-3}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkMLP(b *testing.B) {
	rnd := rand.New(rand.NewPCG(2, 2))
	for _, n := range benchNets {
		in, out := n.sizes[0], n.sizes[len(n.sizes)-1]
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/forward/batch%d", n.name, batch), func(b *testing.B) {
				m := benchMLP(b, n.sizes, n.output)
				x, y := randVec(rnd, batch*in), make([]float64, batch*out)
				b.ReportAllocs()
				for b.Loop() {
					m.Forward(y, x, batch)
				}
			})
		}
		b.Run(n.name+"/forward+backward/batch64", func(b *testing.B) {
			const batch = 64
			m := benchMLP(b, n.sizes, n.output)
			x, y, dy, dx := randVec(rnd, batch*in), make([]float64, batch*out), randVec(rnd, batch*out), make([]float64, batch*in)
			b.ReportAllocs()
			for b.Loop() {
				m.Forward(y, x, batch)
				m.Params().ZeroGrad()
				m.Backward(dx, dy, batch)
			}
		})
		b.Run(n.name+"/adam-step", func(b *testing.B) {
			m := benchMLP(b, n.sizes, n.output)
			copy(m.Params().Grads(), randVec(rnd, m.Params().Len()))
			opt := rl.NewAdam(1e-3)
			b.ReportAllocs()
			for b.Loop() {
				opt.Step(m.Params())
			}
		})
	}
}
