package telemetry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aware-autoscaler/aware/workloads/server"
)

// benchCluster is 1000 applications of 3 pods each, with the workload
// server's 13 duration buckets plus +Inf per pod, fresh at `at`.
func benchCluster(at time.Time) ([]podData, [][]PodKey) {
	const apps, perApp = 1000, 3
	rng := rand.New(rand.NewPCG(1, 2))
	bounds := append(append([]float64(nil), server.DurationBuckets...), inf)
	var pods []podData
	keys := make([][]PodKey, apps)
	for a := range apps {
		for i := range perApp {
			name := fmt.Sprintf("app-%04d-7c9f8b6d5-%05d", a, i)
			p := fullPod(fmt.Sprintf("ns-%02d", a%50), name, at)
			p.cpu, p.mem = rng.Float64(), rng.Float64()*512*mib
			p.buckets = make([]Bucket, len(bounds))
			var c float64
			for j, ub := range bounds {
				c += rng.Float64() * 10
				p.buckets[j] = Bucket{ub, c}
			}
			pods = append(pods, p)
			keys[a] = append(keys[a], PodKey{p.ns, p.pod})
		}
	}
	return pods, keys
}

// BenchmarkSnapshot measures one control round for 3000 pods over a fake
// Prometheus API on loopback (the server side only writes canned JSON):
// the 13 queries, decoding, and assembling the snapshot; then aggregating
// it into 1000 applications' observations.
func BenchmarkSnapshot(b *testing.B) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pods, apps := benchCluster(at)
	fp := newFakeProm(b, 30*time.Second, nil, pods, nil)
	src, err := New(fp.srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	snap, err := src.Snapshot(ctx, 30*time.Second, at)
	if err != nil {
		b.Fatal(err)
	}
	series := 0
	for _, q := range snap.Queries {
		series += q.Series
	}

	b.Run("snapshot/pods=3000", func(b *testing.B) {
		b.ReportAllocs()
		calls := fp.callCount()
		for b.Loop() {
			if _, err := src.Snapshot(ctx, 30*time.Second, at); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(fp.callCount()-calls)/float64(b.N), "queries/op")
		b.ReportMetric(float64(series), "series/op")
	})
	b.Run("aggregate/apps=1000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, keys := range apps {
				if _, err := snap.Aggregate(keys, "app"); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
