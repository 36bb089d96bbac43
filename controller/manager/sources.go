package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/telemetry"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// SnapshotObserver implements autoscaler.Observer with one telemetry
// snapshot per round: the first MPA of a round takes it (a fixed handful of
// PromQL queries for every pod), the others of the same round reuse it.
type SnapshotObserver struct {
	src telemetry.Snapshotter

	mu    sync.Mutex
	round time.Time
	snap  *telemetry.Snapshot
	err   error
}

// NewSnapshotObserver returns an observer over src.
func NewSnapshotObserver(src telemetry.Snapshotter) *SnapshotObserver {
	return &SnapshotObserver{src: src}
}

// Observe implements autoscaler.Observer.
func (o *SnapshotObserver) Observe(ctx context.Context, q autoscaler.Query) (gym.Metrics, error) {
	snap, err := o.snapshot(ctx, q.At.Truncate(q.Window), q.Window)
	if err != nil {
		return gym.Metrics{}, err
	}
	obs, err := snap.AggregateStarting(podKeys(q.Namespace, q.Pods), podKeys(q.Namespace, q.Young), q.Container)
	if err != nil {
		return gym.Metrics{}, err
	}
	return obs.Metrics(len(q.Pods)), nil
}

func podKeys(namespace string, pods []string) []telemetry.PodKey {
	keys := make([]telemetry.PodKey, len(pods))
	for i, p := range pods {
		keys[i] = telemetry.PodKey{Namespace: namespace, Pod: p}
	}
	return keys
}

func (o *SnapshotObserver) snapshot(ctx context.Context, round time.Time, window time.Duration) (*telemetry.Snapshot, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.round.Equal(round) && (o.snap != nil || o.err != nil) {
		return o.snap, o.err
	}
	o.round = round
	o.snap, o.err = o.src.Snapshot(ctx, window, time.Now())
	if o.err != nil && ctx.Err() != nil {
		// A cancelled caller must not poison the round for the others.
		o.round = time.Time{}
	}
	return o.snap, o.err
}

// Sources says where metrics come from and trajectories go.
type Sources struct {
	// PrometheusURL is the Prometheus HTTP API's base URL.
	PrometheusURL string
	// StoreDir holds the embedded trajectory store, or the InfluxDB
	// store's spool when InfluxURL is set.
	StoreDir string
	// InfluxURL selects the InfluxDB (v1 HTTP API) store; InfluxDB names
	// its database (default "aware").
	InfluxURL, InfluxDB string
}

// Open builds the observer and the trajectory store; close the store when
// done.
func (s Sources) Open(ctx context.Context, log *slog.Logger) (autoscaler.Observer, trajectory.Store, error) {
	if s.PrometheusURL == "" {
		return nil, nil, errors.New("controller: a Prometheus URL is required (--prometheus)")
	}
	if s.StoreDir == "" {
		return nil, nil, errors.New("controller: a trajectory store directory is required (--store-dir)")
	}
	src, err := telemetry.New(s.PrometheusURL, telemetry.WithLogger(log))
	if err != nil {
		return nil, nil, err
	}
	var store trajectory.Store
	if s.InfluxURL != "" {
		opts := []trajectory.Option{trajectory.WithLogger(log)}
		if s.InfluxDB != "" {
			opts = append(opts, trajectory.WithDatabase(s.InfluxDB))
		}
		store, err = trajectory.OpenInflux(ctx, s.InfluxURL, filepath.Join(s.StoreDir, "spool"), opts...)
	} else {
		store, err = trajectory.OpenFile(s.StoreDir, trajectory.WithLogger(log))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("controller: %w", err)
	}
	return NewSnapshotObserver(src), store, nil
}
