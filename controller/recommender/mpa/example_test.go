package mpa_test

import (
	"fmt"
	"time"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
)

// A workload needing 12 cores against at most 10 replicas: the HPA scales
// out to the maximum within two minutes, then the VPA grows CPU per pod (and
// trims memory to its recommendation) until the demand is covered.
func Example() {
	b := recommender.Bounds{MinReplicas: 1, MaxReplicas: 10, MinCPU: 0.128, MaxCPU: 2.048, MinMemory: 256 << 20, MaxMemory: 3072 << 20}
	const step = 30 * time.Second
	m, err := mpa.New(b, step, mpa.WithHPA(hpa.WithTarget(0.7)))
	if err != nil {
		panic(err)
	}
	a := recommender.Allocation{Replicas: 2, CPU: 0.5, Memory: 512 << 20}
	for i := 1; i <= 6*60*2; i++ { // six hours
		perPod := min(12/float64(a.Replicas), a.CPU) // throttled at the limit
		next := m.Recommend(recommender.Observation{
			Time: time.Duration(i) * step, Current: a, ReadyReplicas: a.Replicas,
			CPUUsage: perPod * float64(a.Replicas), MemoryPeak: 300 << 20,
		})
		if next != a {
			fmt.Printf("%-8v %v\n", time.Duration(i)*step, next)
		}
		a = next
	}
	// Output:
	// 30s      3×(500m, 512Mi)
	// 1m0s     5×(500m, 512Mi)
	// 1m30s    8×(500m, 512Mi)
	// 2m0s     10×(500m, 512Mi)
	// 18m30s   10×(587m, 363Mi)
	// 33m30s   10×(716m, 363Mi)
	// 58m30s   10×(864m, 363Mi)
	// 1h39m30s 10×(1038m, 363Mi)
	// 2h45m30s 10×(1238m, 363Mi)
	// 4h31m30s 10×(1388m, 363Mi)
}
