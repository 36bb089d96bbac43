package manager

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/telemetry"
)

// pod is a ready pod with every metric: cpu cores used of a 1-core limit
// and rps requests/s.
func pod(name string, cpu, rps float64) telemetry.PodSample {
	all := telemetry.AllMetrics
	ctr := telemetry.MetricCPUUsage | telemetry.MetricMemoryWorkingSet | telemetry.MetricMemoryPeak |
		telemetry.MetricIORate | telemetry.MetricOOMEvents | telemetry.MetricCPULimit | telemetry.MetricMemoryLimit
	return telemetry.PodSample{
		Key: telemetry.PodKey{Namespace: "ns", Pod: name},
		Containers: []telemetry.ContainerSample{{Name: "app", CPUUsage: cpu, MemoryWorkingSet: 1 << 28, MemoryPeak: 1 << 28,
			CPULimit: 1, MemoryLimit: 1 << 30, Has: ctr}},
		Ready: true, Received: rps, Processed: rps,
		Latency: []telemetry.Bucket{{UpperBound: 0.1, Count: rps}, {UpperBound: math.Inf(1), Count: rps}},
		Has:     all &^ ctr,
	}
}

func TestSnapshotObserverLeavesOutYoungPodsWithoutData(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 15, 0, time.UTC)
	// b is known but has no CPU usage yet; c is not scraped at all.
	b := pod("b", 0, 0)
	b.Containers[0].Has &^= telemetry.MetricCPUUsage
	snap := telemetry.NewSnapshot(at, 15*time.Second, pod("a", 0.5, 10), b)
	q := autoscaler.Query{Namespace: "ns", Pods: []string{"a", "b", "c"}, Container: "app", Window: 15 * time.Second, At: at}

	tests := []struct {
		name    string
		young   []string
		wantErr bool
	}{
		{name: "settled pods without data hold the step", wantErr: true},
		{name: "one of the pods without data is settled", young: []string{"c"}, wantErr: true},
		{name: "young pods without data are left out", young: []string{"b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewSnapshotObserver(telemetry.NewFake(snap))
			q := q
			q.Young = tt.young
			m, err := o.Observe(context.Background(), q)
			if tt.wantErr {
				require.ErrorIs(t, err, telemetry.ErrNoData)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, 0.5, m.CPUUsage, 1e-12, "the settled pod's usage")
			assert.Equal(t, 1, m.ReadyReplicas)
			assert.InDelta(t, 10, m.ArrivalRate, 1e-12)
			assert.Equal(t, 3, m.Replicas, "every pod of the target counts as a replica")
		})
	}

	// Only young pods, none with data: nothing to observe.
	o := NewSnapshotObserver(telemetry.NewFake(snap))
	_, err := o.Observe(context.Background(), autoscaler.Query{Namespace: "ns", Pods: []string{"c"}, Young: []string{"c"},
		Container: "app", Window: 15 * time.Second, At: at})
	require.ErrorIs(t, err, telemetry.ErrNoData)
}
