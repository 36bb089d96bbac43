package agents_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/objstore"
)

// memObjects is an in-memory bucket.
type memObjects struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func newMemObjects() *memObjects { return &memObjects{objs: map[string][]byte{}} }

func (m *memObjects) Put(_ context.Context, key string, r io.Reader, _ int64) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[key] = b
	return nil
}

func (m *memObjects) Get(_ context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[key]
	if !ok {
		return nil, fmt.Errorf("get %q: %w", key, fs.ErrNotExist)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memObjects) keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.objs {
		out = append(out, k)
	}
	return out
}

// remoteState is the State in the bucket's copy of a checkpoint (zero when
// there is none yet).
func remoteState(t *testing.T, objs agents.Objects, key string) agents.State {
	t.Helper()
	var st agents.State
	rc, err := objs.Get(t.Context(), key)
	if err != nil {
		return st
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			return st
		}
		if h.Name == "state.json" {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &st))
			return st
		}
	}
}

// flaky makes an Objects' first Get fail as an unreachable store does.
type flaky struct {
	agents.Objects
	mu     sync.Mutex
	failed bool
}

func (f *flaky) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	f.mu.Lock()
	first := !f.failed
	f.failed = true
	f.mu.Unlock()
	if first {
		return nil, errors.New("dial tcp: connection refused")
	}
	return f.Objects.Get(ctx, key)
}

// TestRunnerResumesFromObjectStore: a runner copies its agent's checkpoint
// to the bucket; a second runner with an empty disk first finds the store
// unreachable (it retries instead of starting a fresh agent that would
// overwrite the copy), then restores the checkpoint and resumes: same
// stage, episode, updates and records trained on, no training repeated.
// Against the in-memory bucket and a real S3-compatible store (versitygw).
func TestRunnerResumesFromObjectStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		objs func(t *testing.T) agents.Objects
	}{
		{"memory", func(*testing.T) agents.Objects { return newMemObjects() }},
		{"versitygw", func(t *testing.T) agents.Objects {
			l, err := objstore.StartLocal(t.Context(), t.TempDir())
			if errors.Is(err, objstore.ErrNoBinary) && os.Getenv("CI") != "true" {
				t.Skipf("skipping: %v", err)
			}
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Stop() })
			c, err := objstore.Connect(t.Context(), l.Config())
			require.NoError(t, err)
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ours, store, t0 := offlineWorld(t)
			objs := tc.objs(t)
			obs := autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) { return gym.Metrics{}, nil })
			// The documented layout: <namespace>/<name>-<uid>, here and in the bucket.
			rel := filepath.Join("ns", ours.Name+"-"+string(ours.UID))

			// The first runner trains on the records and copies its checkpoint.
			dirA := t.TempDir()
			saved := trainAndCopy(t, c, obs, store, dirA, objs, rel)

			// The second runner has an empty disk and a store that fails once.
			dirB := t.TempDir()
			b, err := agents.New(c, obs, store, dirB, agents.WithStep(time.Second), agents.WithFactory(smallBCQ),
				agents.WithObjects(&flaky{Objects: objs}, "agents", time.Millisecond))
			require.NoError(t, err)
			start(t, b)
			var got agents.State
			require.Eventually(t, func() bool {
				got, err = agents.ReadState(filepath.Join(dirB, rel))
				return err == nil
			}, 20*time.Second, 50*time.Millisecond, "restored from the bucket")
			assert.Equal(t, string(v1alpha1.StageOffline), got.Stage)
			assert.Equal(t, int64(2), got.Episode)
			assert.Equal(t, 39*2, got.Updates, "the weights' update count, not a fresh agent's")
			assert.True(t, t0.Add(39*time.Second).Equal(got.RecordsUntil), "the records trained on")
			assert.True(t, saved.Saved.Equal(got.Saved), "the first runner's last save, not a fresh agent's (which would train to the same count)")
			agentA, err := os.ReadFile(filepath.Join(dirA, rel, "agent.ckpt"))
			require.NoError(t, err)
			agentB, err := os.ReadFile(filepath.Join(dirB, rel, "agent.ckpt"))
			require.NoError(t, err)
			assert.Equal(t, agentA, agentB, "the same weights")

			var m v1alpha1.MultidimPodAutoscaler
			require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(ours), &m))
			assert.Nil(t, m.Status.Recommendation, "no recommendation withheld: the checkpoint was good")
		})
	}
}

// TestRunnerKeepsUnreadableRemoteCheckpoint: a bucket copy that is not a
// checkpoint is copied aside in the bucket (nothing is lost), the step's
// recommendation is withheld naming the cause, and a fresh agent trains and
// replaces the copy with its own.
func TestRunnerKeepsUnreadableRemoteCheckpoint(t *testing.T) {
	c, ours, store, _ := offlineWorld(t)
	objs := newMemObjects()
	rel := "ns/" + ours.Name + "-" + string(ours.UID)
	key := "agents/" + rel + ".tar"
	require.NoError(t, objs.Put(t.Context(), key, strings.NewReader("garbage"), 7))
	events := record.NewFakeRecorder(10)
	dir := t.TempDir()
	r, err := agents.New(c, autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) { return gym.Metrics{}, nil }),
		store, dir, agents.WithStep(time.Second), agents.WithFactory(smallBCQ), agents.WithRecorder(events),
		agents.WithObjects(objs, "agents", time.Millisecond))
	require.NoError(t, err)
	start(t, r)

	require.Eventually(t, func() bool {
		st, err := agents.ReadState(filepath.Join(dir, rel))
		return err == nil && st.Updates == 39*2
	}, 20*time.Second, 50*time.Millisecond, "a fresh agent trained")
	var m v1alpha1.MultidimPodAutoscaler
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(ours), &m))
	require.NotNil(t, m.Status.Recommendation)
	require.NotNil(t, m.Status.Recommendation.Withheld)
	assert.Equal(t, agents.ReasonCheckpointUnreadable, m.Status.Recommendation.Withheld.Reason)
	assert.Contains(t, m.Status.Recommendation.Withheld.Message, "not a checkpoint archive")
	assert.Contains(t, <-events.Events, "Warning CheckpointUnreadable")

	var aside string
	for _, k := range objs.keys() {
		if strings.HasPrefix(k, key+".unreadable-") {
			aside = k
		}
	}
	require.NotEmpty(t, aside, "copied aside: %v", objs.keys())
	assert.Contains(t, m.Status.Recommendation.Withheld.Message, aside)
	rc, err := objs.Get(t.Context(), aside)
	require.NoError(t, err)
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	assert.Equal(t, "garbage", string(b))
	require.Eventually(t, func() bool {
		rc, err := objs.Get(t.Context(), key)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(rc)
		return string(b) != "garbage"
	}, 10*time.Second, 50*time.Millisecond, "the fresh agent's checkpoint replaces it")
}

// TestRunnerFallsBackToObjectStoreCopy: a local checkpoint as new as the
// bucket's copy but unusable (its weights corrupt) is moved aside and the
// bucket's copy resumes the agent, instead of a fresh agent whose first save
// would overwrite the only good copy.
func TestRunnerFallsBackToObjectStoreCopy(t *testing.T) {
	c, ours, store, _ := offlineWorld(t)
	objs := newMemObjects()
	obs := autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) { return gym.Metrics{}, nil })
	rel := filepath.Join("ns", ours.Name+"-"+string(ours.UID))
	dir := t.TempDir()
	saved := trainAndCopy(t, c, obs, store, dir, objs, rel)

	ckpt := filepath.Join(dir, rel, "agent.ckpt")
	good, err := os.ReadFile(ckpt)
	require.NoError(t, err)
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0xFF
	require.NoError(t, os.WriteFile(ckpt, bad, 0o600))

	b, err := agents.New(c, obs, store, dir, agents.WithStep(time.Second), agents.WithFactory(smallBCQ),
		agents.WithObjects(objs, "agents", time.Millisecond))
	require.NoError(t, err)
	start(t, b)
	require.Eventually(t, func() bool {
		got, err := os.ReadFile(ckpt)
		return err == nil && bytes.Equal(got, good)
	}, 20*time.Second, 50*time.Millisecond, "the bucket's copy restored")
	got, err := agents.ReadState(filepath.Join(dir, rel))
	require.NoError(t, err)
	assert.True(t, saved.Saved.Equal(got.Saved), "the first runner's save, not a fresh agent's")
	assert.Equal(t, 39*2, got.Updates)
	aside, err := filepath.Glob(filepath.Join(dir, rel+".unreadable-*", "agent.ckpt"))
	require.NoError(t, err)
	require.Len(t, aside, 1, "the corrupt local copy is kept aside")
	kept, err := os.ReadFile(aside[0])
	require.NoError(t, err)
	assert.Equal(t, bad, kept)
	assert.Equal(t, good, remoteObject(t, objs, "agents/"+rel+".tar", "agent.ckpt"), "the bucket's copy is still the good one")

	var m v1alpha1.MultidimPodAutoscaler
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(ours), &m))
	assert.Nil(t, m.Status.Recommendation, "nothing withheld: the agent resumed")
}

// remoteObject is the file name in the bucket's checkpoint archive key.
func remoteObject(t *testing.T, objs agents.Objects, key, name string) []byte {
	t.Helper()
	rc, err := objs.Get(t.Context(), key)
	require.NoError(t, err)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		require.NoError(t, err, "%s in %s", name, key)
		if h.Name == name {
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			return b
		}
	}
}

// trainAndCopy runs a runner on dir until its agent has trained on every
// record and its last save is in the bucket, stops it, and returns that
// save's state.
func trainAndCopy(t *testing.T, c client.Client, obs autoscaler.Observer, store trajectory.Store, dir string, objs agents.Objects, rel string) agents.State {
	t.Helper()
	a, err := agents.New(c, obs, store, dir, agents.WithStep(time.Second), agents.WithFactory(smallBCQ),
		agents.WithObjects(objs, "agents", time.Millisecond))
	require.NoError(t, err)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	var saved agents.State
	require.Eventually(t, func() bool {
		saved, err = agents.ReadState(filepath.Join(dir, rel))
		return err == nil && saved.Updates == 39*2 && remoteState(t, objs, "agents/"+rel+".tar").Saved.Equal(saved.Saved)
	}, 20*time.Second, 50*time.Millisecond, "trained on every record, the last save copied to the bucket")
	stop()
	require.NoError(t, <-done)
	return saved
}
