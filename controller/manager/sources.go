package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
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
	keys := make([]telemetry.PodKey, len(q.Pods))
	for i, p := range q.Pods {
		keys[i] = telemetry.PodKey{Namespace: q.Namespace, Pod: p}
	}
	obs, err := snap.Aggregate(keys, q.Container)
	if err != nil {
		settled := withoutYoung(keys, q.Young, err)
		if settled == nil {
			return gym.Metrics{}, err
		}
		if obs, err = snap.Aggregate(settled, q.Container); err != nil {
			return gym.Metrics{}, err
		}
	}
	return obs.Metrics(len(q.Pods)), nil
}

// withoutYoung returns keys without the young pods that err says have no
// data, when that is all err says and a pod remains; otherwise nil.
func withoutYoung(keys []telemetry.PodKey, young []string, err error) []telemetry.PodKey {
	if len(young) == 0 {
		return nil
	}
	des, ok := dataErrors(err)
	if !ok {
		return nil
	}
	drop := map[telemetry.PodKey]bool{}
	for _, de := range des {
		if !errors.Is(de.Err, telemetry.ErrNoData) {
			return nil
		}
		for _, p := range de.Pods {
			if !slices.Contains(young, p.Pod) {
				return nil
			}
			drop[p] = true
		}
	}
	out := slices.DeleteFunc(slices.Clone(keys), func(k telemetry.PodKey) bool { return drop[k] })
	if len(drop) == 0 || len(out) == 0 {
		return nil
	}
	return out
}

// dataErrors returns the *telemetry.DataError leaves of err (Aggregate
// joins one per metric or exporter); ok is false when err holds anything
// else.
func dataErrors(err error) (out []*telemetry.DataError, ok bool) {
	switch e := err.(type) {
	case *telemetry.DataError:
		return []*telemetry.DataError{e}, true
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			des, ok := dataErrors(x)
			if !ok {
				return nil, false
			}
			out = append(out, des...)
		}
		return out, len(out) > 0
	}
	return nil, false
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
