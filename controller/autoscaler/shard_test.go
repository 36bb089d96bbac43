package autoscaler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// TestShardStepsOnlyOwnedMPAs: a replica steps an MPA only in the rounds
// its shard gives it the MPA; it forgets an MPA it loses (another replica
// drives it and writes its checkpoint), and when the MPA comes back it
// restores the recommender from the checkpoint instead of going on from
// the history it had.
func TestShardStepsOnlyOwnedMPAs(t *testing.T) {
	own, fail := true, false
	var asked []string
	sh := ShardFunc(func(_ context.Context, key string, round time.Time) (bool, error) {
		asked = append(asked, key)
		require.Equal(t, round, round.Truncate(15*time.Second), "asked for a round's start")
		if fail {
			return false, errors.New("the API server is away")
		}
		return own, nil
	})
	rec := record.NewFakeRecorder(64)
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) { m.UID = "uid-1" }, WithCheckpoints(nil, 1), WithShard(sh), WithRecorder(rec))
	for range 3 {
		w.step(t)
	}
	require.Contains(t, w.r.state, types.UID("uid-1"))
	assert.Equal(t, []string{"uid-1", "uid-1", "uid-1"}, asked)
	assert.Equal(t, int64(3), w.checkpoint(t).Status.Steps)

	own = false
	before := w.mpa(t)
	w.step(t)
	assert.NotContains(t, w.r.state, "uid-1", "a lost MPA is forgotten")
	assert.Equal(t, before.Status, w.mpa(t).Status, "and not stepped")

	fail, own = true, true
	w.step(t)
	assert.NotContains(t, w.r.state, "uid-1", "an unknown membership steps nothing")
	assert.Equal(t, before.Status, w.mpa(t).Status)

	events(rec)
	fail = false
	w.step(t)
	require.Contains(t, w.r.state, types.UID("uid-1"))
	assert.Contains(t, events(rec), "Normal CheckpointRestored recommender restored from its checkpoint of 2026-01-01T00:00:45Z (3 steps)",
		"taken back, the recommender is the checkpoint's (the replica that drove it in between writes it)")
	assert.Equal(t, int64(4), w.r.state["uid-1"].builtin().Steps())
}
