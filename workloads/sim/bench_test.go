package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// randomApps builds n applications like the generator's: chains of 1–4
// calibrated segments sharing one day-long load shape.
func randomApps(prof *calibration.Profile, n int, seed uint64) []App {
	r := rand.New(rand.NewPCG(seed, 1))
	shape := make([]float64, 2880)
	for i := range shape {
		shape[i] = 0.5 + r.Float64()
	}
	apps := make([]App, n)
	for i := range apps {
		chain := make([]segments.Spec, 1+r.IntN(4))
		for j := range chain {
			e := prof.Entries[r.IntN(len(prof.Entries))]
			chain[j] = segments.Spec{Name: e.Segment, Size: e.Size}
		}
		apps[i] = App{
			Name: fmt.Sprintf("app-%04d", i), Chain: chain, Speed: 0.8 + 0.4*r.Float64(), Noise: 0.05,
			SLO:     gym.SLO{Kind: gym.LatencySLO, Target: 0.5},
			Load:    Load{Shape: shape, Offset: r.IntN(len(shape)), Scale: 1 + 50*r.Float64()},
			Initial: Allocation{Replicas: 1 + r.IntN(3), CPU: 0.5 + r.Float64(), Memory: 512 * gym.MiB},
		}
	}
	return apps
}

// BenchmarkCluster measures app-steps per second of a whole cluster step
// (the target is 1,000,000 on two cores for 1000 apps) and the memory each
// application costs, without its shared load shape.
func BenchmarkCluster(b *testing.B) {
	prof, err := calibration.Default()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 1000, 10000} {
		for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("apps=%d/workers=%d", n, workers), func(b *testing.B) {
				apps := randomApps(prof, n, 1)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				c, err := New(prof, apps, WithWorkers(workers))
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				ctx := context.Background()
				obs, rew, done := make([]float64, n*gym.StateDim), make([]float64, n), make([]bool, n)
				act := make([]float64, n*gym.ActDim)
				for i := range n {
					copy(act[i*gym.ActDim:], []float64{2, 1, 1 << 30})
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := c.Step(ctx, act, obs, rew, done); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "app-steps/s")
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "B/app")
			})
		}
	}
}
