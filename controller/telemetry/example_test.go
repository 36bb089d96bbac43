package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aware-autoscaler/aware/controller/telemetry"
)

// A controller round: one snapshot for every application, then one
// aggregation per application; data errors hold that application's
// decision.
func ExampleSnapshot_Aggregate() {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	inf := math.Inf(1)
	pod := func(name string, cpu, reqs float64, bucket int) telemetry.PodSample {
		hist := []telemetry.Bucket{{UpperBound: 0.025}, {UpperBound: 0.1}, {UpperBound: inf}}
		for i := bucket; i < len(hist); i++ {
			hist[i].Count = reqs
		}
		return telemetry.PodSample{
			Key: telemetry.PodKey{Namespace: "shop", Pod: name},
			Containers: []telemetry.ContainerSample{{Name: "app", CPUUsage: cpu, MemoryWorkingSet: 200 << 20, MemoryPeak: 250 << 20,
				CPULimit: 1, MemoryLimit: 512 << 20, Has: telemetry.AllMetrics}},
			Ready: true, Received: reqs, Processed: reqs, Latency: hist, Has: telemetry.AllMetrics,
		}
	}
	var src telemetry.Snapshotter = telemetry.NewFake(telemetry.NewSnapshot(at, 30*time.Second,
		pod("cart-7c9f8b6d5-x2v4k", 0.4, 60, 0), pod("cart-7c9f8b6d5-q9z8p", 0.6, 40, 1)))

	snap, err := src.Snapshot(context.Background(), 30*time.Second, at)
	if err != nil {
		fmt.Println("no snapshot:", err)
		return
	}
	for _, app := range [][]telemetry.PodKey{
		{{Namespace: "shop", Pod: "cart-7c9f8b6d5-x2v4k"}, {Namespace: "shop", Pod: "cart-7c9f8b6d5-q9z8p"}},
		{{Namespace: "shop", Pod: "search-5b7d9-kx2z4"}},
	} {
		o, err := snap.Aggregate(app, "app")
		if errors.Is(err, telemetry.ErrNoData) || errors.Is(err, telemetry.ErrStale) {
			fmt.Println("hold:", err)
			continue
		}
		m := o.Metrics(2)
		fmt.Printf("ready %d, cpu %.1f of %.0f×%d cores, %.0f req/s, p99 %.1f ms\n",
			m.ReadyReplicas, m.CPUUsage, m.CPULimit, m.Replicas, m.ArrivalRate, m.LatencyP99*1000)
	}
	// Output:
	// ready 2, cpu 1.0 of 1×2 cores, 100 req/s, p99 98.1 ms
	// hold: telemetry: no data (1 pods: shop/search-5b7d9-kx2z4): no series at all for these pods
}
