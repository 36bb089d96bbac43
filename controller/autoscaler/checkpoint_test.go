package autoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
	"github.com/aware-autoscaler/aware/gym"
)

func (w *world) checkpoint(t *testing.T) *v1alpha1.MultidimPodAutoscalerCheckpoint {
	t.Helper()
	var ck v1alpha1.MultidimPodAutoscalerCheckpoint
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app"}, &ck))
	return &ck
}

// restart replaces w's reconciler by a new one (a restarted controller:
// no state) with the same client, clock and observer, recording events
// into the returned recorder.
func (w *world) restart(t *testing.T, opts ...Option) *record.FakeRecorder {
	t.Helper()
	rec := record.NewFakeRecorder(16)
	r, err := New(w.c, w.r.obs, w.store, append([]Option{WithClock(func() time.Time { return w.now }), WithRecorder(rec)}, opts...)...)
	require.NoError(t, err)
	w.r = r
	return rec
}

func events(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestCheckpointRestoresTheRecommender: the controller writes each MPA's
// recommender to a checkpoint owned by the MPA, and a restarted controller
// goes on from it (the HPA's window and the VPA's histograms it had), not
// from nothing; a checkpoint of another MPA of the same name, of a
// generation newer than the MPA's or damaged is not restored, and is
// overwritten.
func TestCheckpointRestoresTheRecommender(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) { m.UID = "uid-1" }, WithCheckpoints(nil, 1))
	for range 3 {
		w.step(t)
	}
	ck := w.checkpoint(t)
	assert.Equal(t, v1alpha1.MultidimPodAutoscalerCheckpointSpec{MPAName: "app", MPAUID: "uid-1"}, ck.Spec)
	require.Len(t, ck.OwnerReferences, 1)
	assert.Equal(t, types.UID("uid-1"), ck.OwnerReferences[0].UID, "deleted with its MPA")
	assert.Equal(t, "MultidimPodAutoscaler", ck.OwnerReferences[0].Kind)
	assert.Equal(t, int64(3), ck.Status.Steps)
	assert.Equal(t, v1alpha1.CheckpointVersion, ck.Status.Version)
	assert.Equal(t, int64(1), ck.Status.ObservedGeneration)
	var saved mpa.State
	require.NoError(t, json.Unmarshal(ck.Status.Recommender.Raw, &saved))
	assert.Equal(t, w.r.state["uid-1"].builtin().State(), saved, "the checkpoint holds the recommender as it is")

	events0 := w.restart(t, WithCheckpoints(nil, 1))
	w.step(t)
	assert.Contains(t, events(events0), "Normal CheckpointRestored recommender restored from its checkpoint of 2026-01-01T00:00:45Z (3 steps)")
	got := w.r.state["uid-1"].builtin().State()
	assert.Equal(t, int64(4), got.VPA.Calls, "the restored recommender's history goes on")
	assert.Equal(t, saved.HPA.Records[0], got.HPA.Records[0], "the HPA's window from before the restart")
	assert.Equal(t, int64(4), w.checkpoint(t).Status.Steps, "and is written again")

	// Without checkpoints a restarted controller starts afresh.
	w.restart(t)
	w.step(t)
	assert.Equal(t, int64(1), w.r.state["uid-1"].builtin().Steps())

	for _, tt := range []struct {
		name string
		edit func(*v1alpha1.MultidimPodAutoscalerCheckpoint)
		want string
	}{
		{"another MPA", func(c *v1alpha1.MultidimPodAutoscalerCheckpoint) { c.Spec.MPAUID = "uid-0" },
			"Normal CheckpointIgnored checkpoint not restored, the recommender starts afresh: it belongs to an earlier MPA of this name (UID uid-0)"},
		{"a newer generation", func(c *v1alpha1.MultidimPodAutoscalerCheckpoint) { c.Status.ObservedGeneration = 7 },
			"Normal CheckpointIgnored checkpoint not restored, the recommender starts afresh: it is of generation 7, newer than the spec's 1"},
		{"a damaged state", func(c *v1alpha1.MultidimPodAutoscalerCheckpoint) {
			c.Status.Recommender.Raw = []byte(`{"hpa":{"step":60000000000}}`)
		}, "Normal CheckpointIgnored checkpoint not restored, the recommender starts afresh: mpa: hpa: restore: step 1m0s, this HPA's is 15s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ck := w.checkpoint(t)
			tt.edit(ck)
			require.NoError(t, w.c.Update(context.Background(), ck))
			ev := w.restart(t, WithCheckpoints(nil, 1))
			w.step(t)
			assert.Contains(t, events(ev), tt.want)
			assert.Equal(t, int64(1), w.r.state["uid-1"].builtin().Steps(), "afresh")
			after := w.checkpoint(t)
			assert.Equal(t, types.UID("uid-1"), after.Spec.MPAUID, "overwritten by this MPA's")
			assert.Equal(t, int64(1), after.Status.ObservedGeneration)
		})
	}
}

// TestRestartedControllerRecommendsTheSame: a controller restarted after
// its third step writes, at its fourth, the recommendation and decision an
// uninterrupted one writes; without the checkpoint it does not.
func TestRestartedControllerRecommendsTheSame(t *testing.T) {
	run := func(restart, checkpoints bool) *v1alpha1.MultidimPodAutoscaler {
		var opts []Option
		if checkpoints {
			opts = append(opts, WithCheckpoints(nil, 1))
		}
		w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) { m.UID = "uid-1" }, opts...)
		for i := range 12 {
			if i == 6 {
				// The load falls: the HPA's scale-down window and the
				// VPA's history decide what comes next.
				w.met.CPUUsage, w.met.MemoryPeak = 0.3, 150*gym.MiB
			}
			if i == 8 && restart {
				w.restart(t, opts...)
			}
			w.step(t)
		}
		m := w.mpa(t)
		return m
	}
	want := run(false, true)
	got := run(true, true)
	assert.Equal(t, want.Status.Recommendation, got.Status.Recommendation)
	assert.Equal(t, want.Status.DesiredReplicas, got.Status.DesiredReplicas)
	fresh := run(true, false)
	assert.NotEqual(t, want.Status.Recommendation, fresh.Status.Recommendation, "a controller restarted without checkpoints forgets")
}

// TestCheckpointWritesSpreadOverRounds: with a checkpoint every 4 steps,
// MPAs write in different rounds (by their UIDs), each once per 4 steps.
func TestCheckpointWritesSpreadOverRounds(t *testing.T) {
	r, err := New(fake.NewClientBuilder().Build(), ObserverFunc(nil), nil, WithCheckpoints(nil, 4))
	require.NoError(t, err)
	rounds := map[int64]int{}
	for i := range 40 {
		m := &v1alpha1.MultidimPodAutoscaler{}
		m.UID = types.UID(string(rune('a'+i%26)) + string(rune('0'+i/26)))
		n := 0
		for s := int64(1); s <= 8; s++ {
			if r.checkpointDue(m, s) {
				n++
				rounds[s%4]++
			}
		}
		assert.Equal(t, 2, n, "%s: once every 4 of 8 steps", m.UID)
	}
	assert.Len(t, rounds, 4, "writes in every round: %v", rounds)
	r0, err := New(fake.NewClientBuilder().Build(), ObserverFunc(nil), nil)
	require.NoError(t, err)
	assert.False(t, r0.checkpointDue(&v1alpha1.MultidimPodAutoscaler{}, 4), "off by default")
	_, err = New(fake.NewClientBuilder().Build(), ObserverFunc(nil), nil, WithCheckpoints(nil, -1))
	assert.ErrorContains(t, err, "checkpoint every -1 steps")
}

// TestSpecChangeKeepsWhatTheRecommenderLearnt: a new spec (here the replica
// bounds) builds a recommender of the new policy that goes on from the
// old one's history, as upstream VPA and HPA keep theirs when their object
// changes; a controller restarted after the change restores the checkpoint
// written before it (an earlier generation's).
func TestSpecChangeKeepsWhatTheRecommenderLearnt(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) { m.UID = "uid-1" }, WithCheckpoints(nil, 4))
	for range 4 {
		w.step(t)
	}
	before := w.r.state["uid-1"].builtin().State()
	require.Equal(t, int64(4), before.VPA.Calls)
	require.Equal(t, int64(1), w.checkpoint(t).Status.ObservedGeneration)

	m := w.mpa(t)
	m.Spec.Constraints.MaxReplicas = 12
	m.Generation = 2 // the API server's doing; the fake's Update keeps it as given
	require.NoError(t, w.c.Update(context.Background(), m))
	w.step(t)
	got := w.r.state["uid-1"].builtin().State()
	assert.Equal(t, int64(5), got.VPA.Calls, "the history goes on across the spec change")
	assert.Greater(t, got.VPA.CPU.Total, before.VPA.CPU.Total, "the CPU histogram keeps its samples and adds one")
	assert.Equal(t, before.HPA.Records[0], got.HPA.Records[0], "the HPA's window from before the change")
	p, err := PolicyOf(w.mpa(t))
	require.NoError(t, err)
	assert.Equal(t, 12, p.Bounds.MaxReplicas, "under the new spec")

	// A controller restarted now restores a checkpoint written before the
	// change (of generation 1).
	ck := w.checkpoint(t)
	ck.Status.ObservedGeneration = 1
	require.NoError(t, w.c.Update(context.Background(), ck))
	ev := w.restart(t, WithCheckpoints(nil, 4))
	w.step(t)
	assert.Contains(t, events(ev), fmt.Sprintf("Normal CheckpointRestored recommender restored from its checkpoint of %s (%d steps)",
		ck.Status.LastUpdateTime.UTC().Format(time.RFC3339), ck.Status.Steps))
	assert.Equal(t, ck.Status.Steps+1, w.r.state["uid-1"].builtin().State().VPA.Calls)
}

// TestFlushCheckpointsOnShutdown: a controller stopping writes the
// checkpoint of every MPA that stepped since its last one, so that its
// replacement goes on from the last step; a second flush writes nothing.
func TestFlushCheckpointsOnShutdown(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) { m.UID = "uid-1" }, WithCheckpoints(nil, 1000))
	n, err := w.r.FlushCheckpoints(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "nothing stepped")
	for range 3 {
		w.step(t)
	}
	var none v1alpha1.MultidimPodAutoscalerCheckpoint
	require.Error(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app"}, &none), "no periodic checkpoint yet (one per 1000 steps)")
	n, err = w.r.FlushCheckpoints(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ck := w.checkpoint(t)
	assert.Equal(t, int64(3), ck.Status.Steps)
	assert.Equal(t, types.UID("uid-1"), ck.Spec.MPAUID)
	assert.Equal(t, int64(1), ck.Status.ObservedGeneration)
	n, err = w.r.FlushCheckpoints(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "already written")

	ev := w.restart(t, WithCheckpoints(nil, 1000))
	w.step(t)
	assert.Contains(t, events(ev), "Normal CheckpointRestored recommender restored from its checkpoint of 2026-01-01T00:00:45Z (3 steps)")
	assert.Equal(t, int64(4), w.r.state["uid-1"].builtin().Steps())

	// A cancelled flush says what it did not write.
	w.step(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = w.r.FlushCheckpoints(ctx)
	require.ErrorContains(t, err, "1 checkpoints not written: context canceled")
}
