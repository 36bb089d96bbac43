package autoscaler

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Shard says which MPAs this controller drives in a round, when several
// replicas share them (controller/shard.Membership).
type Shard interface {
	// Owns reports whether the controller drives the MPA of UID key in
	// the round starting at round. An error means it cannot tell, and it
	// drives nothing.
	Owns(ctx context.Context, key string, round time.Time) (bool, error)
}

// ShardFunc is a Shard from a function (tests, fixed partitions).
type ShardFunc func(ctx context.Context, key string, round time.Time) (bool, error)

// Owns implements Shard.
func (f ShardFunc) Owns(ctx context.Context, key string, round time.Time) (bool, error) {
	return f(ctx, key, round)
}

// WithShard makes the controller drive only the MPAs the shard gives it,
// round by round. An MPA it stops driving is forgotten (state, metric
// series): the replica that takes it over restores its recommender from
// the MPA's checkpoint, and so does this one if the MPA comes back.
func WithShard(s Shard) Option { return func(c *config) { c.shard = s } }

// owns reports whether this controller steps the MPA in the round of now,
// forgetting the MPA when it does not.
func (r *Reconciler) owns(ctx context.Context, uid, namespace, name string, now time.Time) bool {
	if r.cfg.shard == nil {
		return true
	}
	own, err := r.cfg.shard.Owns(ctx, uid, now.Truncate(r.cfg.step))
	if err != nil {
		r.cfg.log.Debug("shard membership unknown; not stepping", "mpa", namespace+"/"+name, "err", err)
	}
	if own && err == nil {
		return true
	}
	r.mu.Lock()
	_, held := r.names[types.UID(uid)]
	r.mu.Unlock()
	if held {
		r.forget(types.NamespacedName{Namespace: namespace, Name: name})
		r.cfg.log.Info("MPA left this replica's shard", "mpa", namespace+"/"+name)
	}
	return false
}
