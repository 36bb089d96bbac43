package agents_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/bootstrap"
	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

// smallBCQ makes bootstrapping agents with minibatches of 8.
func smallBCQ(stateDim, actionDim int, _ bool, seed uint64) (agent.Agent, error) {
	return bootstrap.New(stateDim, actionDim, rand.New(rand.NewPCG(seed, 1)), bootstrap.WithBatch(8))
}

// checkpointDir is the runner's checkpoint folder of m's agent in dir.
func checkpointDir(dir string, m *v1alpha1.MultidimPodAutoscaler) string {
	return filepath.Join(dir, m.Namespace, m.Name+"-"+string(m.UID))
}

// plantCheckpoint writes a checkpoint folder for m's agent in dir with the
// given state.json and agent.ckpt, and returns it.
func plantCheckpoint(t *testing.T, dir string, m *v1alpha1.MultidimPodAutoscaler, state, agentFile string) string {
	t.Helper()
	ck := checkpointDir(dir, m)
	require.NoError(t, os.MkdirAll(ck, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ck, "state.json"), []byte(state), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ck, "agent.ckpt"), []byte(agentFile), 0o644))
	return ck
}

// start runs r until the test ends, then checks that it stopped cleanly.
func start(t *testing.T, r *agents.Runner) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return ctx
}

// TestRunnerOffline runs the runner over a fake cluster: it hosts an agent
// for the MPA that names it and none for the one that does not; the
// agent's checkpoint is unreadable, so it is moved aside, the step's
// recommendation withheld with the cause (the controller then acts on
// HPA+VPA) and a Warning event recorded; the fresh agent trains on the
// controller's Offline records and is checkpointed.
func TestRunnerOffline(t *testing.T) {
	c, ours, store, t0 := offlineWorld(t)
	mpas := []client.Object{ours, otherMPA(t, c)}
	dir := t.TempDir()
	ck := plantCheckpoint(t, dir, ours, `{"uid":"uid","updates":7,"actions":"relative"}`, "not a checkpoint")

	events := record.NewFakeRecorder(10)
	r, err := agents.New(c, autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) {
		t.Error("an Offline agent observes nothing")
		return gym.Metrics{}, nil
	}), store, dir, agents.WithStep(time.Second), agents.WithFactory(smallBCQ), agents.WithRecorder(events))
	require.NoError(t, err)
	ctx := start(t, r)

	var st agents.State
	require.Eventually(t, func() bool {
		st, err = agents.ReadState(ck)
		return err == nil && st.UID == string(ours.UID) && st.Updates > 0
	}, 20*time.Second, 50*time.Millisecond, "trained on the records and checkpointed")
	assert.Equal(t, string(v1alpha1.StageOffline), st.Stage)
	assert.Equal(t, int64(2), st.Episode)
	assert.True(t, t0.Add(39*time.Second).Equal(st.RecordsUntil), "every record but the last (its successor is not known yet) trained on")
	assert.Equal(t, 39*2, st.Updates, "2 updates per record")

	var m v1alpha1.MultidimPodAutoscaler
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ours), &m))
	require.NotNil(t, m.Status.Recommendation)
	require.NotNil(t, m.Status.Recommendation.Withheld)
	assert.Equal(t, agents.ReasonCheckpointUnreadable, m.Status.Recommendation.Withheld.Reason)
	assert.Contains(t, m.Status.Recommendation.Withheld.Message, "moved to "+ck+".unreadable-")
	assert.Contains(t, m.Status.Recommendation.Withheld.Message, "agent.ckpt", "the cause is named")
	assert.WithinDuration(t, time.Now(), m.Status.Recommendation.Time.Time, time.Minute)
	assert.Contains(t, <-events.Events, "Warning CheckpointUnreadable")
	moved, err := filepath.Glob(ck + ".unreadable-*")
	require.NoError(t, err)
	require.Len(t, moved, 1)
	b, err := os.ReadFile(filepath.Join(moved[0], "agent.ckpt"))
	require.NoError(t, err)
	assert.Equal(t, "not a checkpoint", string(b), "nothing is deleted")

	var other v1alpha1.MultidimPodAutoscaler
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(mpas[1]), &other))
	assert.Nil(t, other.Status.Recommendation, "the MPA of the built-in recommender is not the runner's")
	_, err = os.Stat(filepath.Join(dir, "ns", other.Name+"-"+string(other.UID)))
	assert.True(t, os.IsNotExist(err), "no agent for it")
}

// TestRunnerOfflineCheckpointInterval: an OFFLINE agent is checkpointed
// after its first round of training and then at most every interval, not
// at every step that brings records; a restarted runner resumes from that
// checkpoint and trains again on the records since, then checkpoints.
func TestRunnerOfflineCheckpointInterval(t *testing.T) {
	c, ours, store, t0 := offlineWorld(t)
	dir := t.TempDir()
	ck := checkpointDir(dir, ours)
	obs := autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) { return gym.Metrics{}, nil })
	run := func() (*prometheus.Registry, context.CancelFunc, chan error) {
		reg := prometheus.NewRegistry()
		r, err := agents.New(c, obs, store, dir, agents.WithStep(time.Second), agents.WithFactory(smallBCQ),
			agents.WithOfflineCheckpoints(time.Hour), agents.WithRegisterer(reg))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Start(ctx) }()
		t.Cleanup(cancel)
		return reg, cancel, done
	}
	counter := func(reg *prometheus.Registry, name string) float64 {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		total := 0.0
		for _, mf := range mfs {
			if mf.GetName() == name {
				for _, m := range mf.GetMetric() {
					total += m.GetCounter().GetValue()
				}
			}
		}
		return total
	}

	reg, stop, done := run()
	var first agents.State
	require.Eventually(t, func() bool {
		var err error
		first, err = agents.ReadState(ck)
		return err == nil && first.Updates > 0
	}, 20*time.Second, 50*time.Millisecond, "the first round of training is checkpointed")
	assert.Equal(t, 39*2, first.Updates)

	// Ten more records of episode 2: trained on, not checkpointed.
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := 40; i < 50; i++ {
		st := make([]float64, gym.StateDim)
		for j := range st {
			st[j] = rnd.Float64()
		}
		require.NoError(t, store.Append(t.Context(), trajectory.Step{App: "ns/" + ours.Name, Episode: 2, T: i - 40,
			Time: t0.Add(time.Duration(i) * time.Second), State: st, Action: []float64{2, 0.5, 1 << 28}, Reward: 1, Stage: string(v1alpha1.StageOffline)}))
	}
	require.Eventually(t, func() bool { return counter(reg, "aware_agents_updates_total") == 49*2 }, 20*time.Second, 50*time.Millisecond,
		"the new records trained on")
	assert.Equal(t, 1.0, counter(reg, "aware_agents_checkpoints_total"), "one checkpoint within the interval")
	st, err := agents.ReadState(ck)
	require.NoError(t, err)
	assert.Equal(t, first, st, "the checkpoint is the first round's")
	stop()
	require.NoError(t, <-done)

	// A restart: the checkpoint of the first round, then the records since.
	reg, _, _ = run()
	require.Eventually(t, func() bool {
		st, err = agents.ReadState(ck)
		return err == nil && st.Updates == 49*2
	}, 20*time.Second, 50*time.Millisecond, "the records since the checkpoint trained on again and checkpointed")
	assert.True(t, t0.Add(49*time.Second).Equal(st.RecordsUntil), "up to the last record, %v", st.RecordsUntil)
	assert.Equal(t, 1.0, counter(reg, "aware_agents_resumed_total"))
	assert.Equal(t, 20.0, counter(reg, "aware_agents_updates_total"), "only the ten records since the checkpoint")
}

// TestRunnerReportsInvalidPolicy: an MPA that names the runner with a
// policy the controller refuses gets no agent and one warning event per
// generation, instead of being skipped without a word.
func TestRunnerReportsInvalidPolicy(t *testing.T) {
	c, ours, store, _ := offlineWorld(t)
	bad := v1alpha1.UpdateMode("Sometimes")
	ours.Spec.UpdatePolicy = &v1alpha1.PodUpdatePolicy{UpdateMode: &bad}
	require.NoError(t, c.Update(t.Context(), ours))
	events := record.NewFakeRecorder(10)
	dir := t.TempDir()
	lc := &listCounter{Client: c}
	r, err := agents.New(lc, autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) { return gym.Metrics{}, nil }),
		store, dir, agents.WithStep(time.Second), agents.WithFactory(smallBCQ), agents.WithRecorder(events))
	require.NoError(t, err)
	start(t, r)
	require.Eventually(t, func() bool { return lc.lists.Load() >= 3 }, 20*time.Second, 50*time.Millisecond, "three syncs")
	require.Len(t, events.Events, 1, "one event per generation, not per sync")
	e := <-events.Events
	assert.Contains(t, e, "Warning InvalidPolicy")
	assert.Contains(t, e, `unknown mode "Sometimes"`)
	_, err = os.Stat(checkpointDir(dir, ours))
	assert.True(t, os.IsNotExist(err), "no agent for it")
}

// listCounter counts the List calls of a client: the runner lists the
// MPAs once per sync.
type listCounter struct {
	client.Client
	lists atomic.Int32
}

func (l *listCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := l.Client.List(ctx, list, opts...)
	if _, ok := list.(*v1alpha1.MultidimPodAutoscalerList); ok {
		l.lists.Add(1)
	}
	return err
}

// TestRunnerRefusesCheckpointOfAnotherMapping: an agent checkpointed by a
// runner whose agents acted through other actions (here absolute: a
// checkpoint from before the mapping was recorded) is moved aside, not
// loaded into an agent whose actions would mean something else.
func TestRunnerRefusesCheckpointOfAnotherMapping(t *testing.T) {
	c, ours, store, _ := offlineWorld(t)
	dir := t.TempDir()
	ck := plantCheckpoint(t, dir, ours, `{"uid":"uid","updates":7}`, "weights of an absolute agent")
	r, err := agents.New(c, autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) { return gym.Metrics{}, nil }),
		store, dir, agents.WithStep(time.Second), agents.WithFactory(smallBCQ), agents.WithActions(gym.Relative))
	require.NoError(t, err)
	ctx := start(t, r)
	var st agents.State
	require.Eventually(t, func() bool {
		st, err = agents.ReadState(ck)
		return err == nil && st.UID == string(ours.UID) && st.Updates > 0
	}, 20*time.Second, 50*time.Millisecond, "a fresh agent trained and checkpointed")
	assert.Equal(t, "relative", st.Actions)
	var m v1alpha1.MultidimPodAutoscaler
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ours), &m))
	require.NotNil(t, m.Status.Recommendation)
	require.NotNil(t, m.Status.Recommendation.Withheld)
	assert.Contains(t, m.Status.Recommendation.Withheld.Message, "acted through absolute actions, this runner's agents act through relative")
	moved, err := filepath.Glob(ck + ".unreadable-*")
	require.NoError(t, err)
	require.Len(t, moved, 1)
	b, err := os.ReadFile(filepath.Join(moved[0], "agent.ckpt"))
	require.NoError(t, err)
	assert.Equal(t, "weights of an absolute agent", string(b), "nothing is deleted")
}

// TestRunnerOfflineWithMeta: with the meta learner, the agent's states end
// with the embedding of the MPA's best complete episodes in the store,
// refilled after a restart.
func TestRunnerOfflineWithMeta(t *testing.T) {
	c, ours, store, t0 := offlineWorld(t)
	cfg := meta.DefaultConfig(gym.StateDim + gym.ActDim + 1)
	cfg.Hidden, cfg.FC, cfg.Embed = 8, 8, 4
	emb, err := meta.NewEmbedder(cfg, rand.New(rand.NewPCG(3, 4)))
	require.NoError(t, err)
	f, err := meta.NewFLASH(emb, meta.DefaultOptions(20))
	require.NoError(t, err)
	var (
		mu    sync.Mutex // guards fakes and what they observe
		fakes []*lockedFake
	)
	factory := func(stateDim, actionDim int, boot bool, _ uint64) (agent.Agent, error) {
		assert.True(t, boot)
		assert.Equal(t, gym.StateDim+4, stateDim, "the AWARE state and the embedding")
		fk := &lockedFake{Fake: agent.NewFake(make([]float64, actionDim)), mu: &mu}
		mu.Lock()
		defer mu.Unlock()
		fakes = append(fakes, fk)
		return fk, nil
	}
	dir := t.TempDir()
	ck := checkpointDir(dir, ours)
	run := func(until func() bool) {
		r, err := agents.New(c, autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) {
			return gym.Metrics{}, nil
		}), store, dir, agents.WithStep(time.Second), agents.WithFactory(factory), agents.WithMeta(f), agents.WithUpdates(1, 1))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Start(ctx) }()
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return until()
		}, 20*time.Second, 50*time.Millisecond)
		cancel()
		require.NoError(t, <-done)
	}
	run(func() bool {
		st, err := agents.ReadState(ck)
		return err == nil && t0.Add(39*time.Second).Equal(st.RecordsUntil)
	})
	require.Len(t, fakes, 1)
	got := fakes[0].Observed
	require.Len(t, got, 39)
	z := got[0].State[gym.StateDim:]
	assert.NotEqual(t, make([]float64, 4), z, "an embedding of the two recorded episodes")
	for _, tr := range got {
		assert.Len(t, tr.State, gym.StateDim+4)
		assert.Equal(t, z, tr.State[gym.StateDim:], "one embedding for the round")
		assert.Equal(t, z, tr.Next[gym.StateDim:])
	}

	// A restarted runner (a new FLASH as a new process has) refills the
	// replay memory with the same embedding.
	f, err = meta.NewFLASH(emb, meta.DefaultOptions(20))
	require.NoError(t, err)
	run(func() bool { return len(fakes) == 2 && len(fakes[1].Observed) >= 39 })
	require.Len(t, fakes, 2)
	require.Len(t, fakes[1].Observed, 39)
	assert.Equal(t, z, fakes[1].Observed[0].State[gym.StateDim:])
}

// offlineWorld is a fake cluster with two MPAs in stage Offline, the first
// naming the runner and the second the built-in recommender, and a store
// with two episodes of the controller's records of the first.
func offlineWorld(t *testing.T) (client.Client, *v1alpha1.MultidimPodAutoscaler, *trajectory.Memory, time.Time) {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	prof, err := calibration.Default()
	require.NoError(t, err)
	opts := generator.DefaultOptions()
	opts.Apps = 2
	apps, err := generator.Generate(opts, prof)
	require.NoError(t, err)
	var mpas []client.Object
	for i, rec := range []string{agents.DefaultName, v1alpha1.DefaultRecommenderName} {
		objs, err := generator.Build(apps[i], generator.ManifestOptions{Namespace: "ns", Recommender: rec})
		require.NoError(t, err)
		m := objs.MPA
		m.UID = types.UID("uid-" + m.Name)
		m.Status.Agent = &v1alpha1.AgentStatus{Stage: v1alpha1.StageOffline, Episode: 2}
		mpas = append(mpas, m)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(mpas...).WithStatusSubresource(&v1alpha1.MultidimPodAutoscaler{}).Build()
	ours := mpas[0].(*v1alpha1.MultidimPodAutoscaler)
	pol, err := autoscaler.PolicyOf(ours)
	require.NoError(t, err)
	space := gym.ActionSpace(pol.GymBounds())

	// Two episodes of records of HPA+VPA acting, a step (1 s) apart.
	store := trajectory.NewMemory()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		st := make([]float64, gym.StateDim)
		for j := range st {
			st[j] = rnd.Float64()
		}
		act := []float64{float64(2 + i%3), space.Low[gym.ActCPU] + 0.5, space.High[gym.ActMemory] / 2}
		require.NoError(t, store.Append(context.Background(), trajectory.Step{App: "ns/" + ours.Name, Episode: int64(i / 20), T: i % 20,
			Time: t0.Add(time.Duration(i) * time.Second), State: st, Action: act, Reward: 1 + rnd.Float64(), Done: i%20 == 19, Stage: string(v1alpha1.StageOffline)}))
	}

	return c, ours, store, t0
}

func otherMPA(t *testing.T, c client.Client) *v1alpha1.MultidimPodAutoscaler {
	var l v1alpha1.MultidimPodAutoscalerList
	require.NoError(t, c.List(t.Context(), &l))
	for i := range l.Items {
		if r := l.Items[i].Spec.Recommenders; len(r) == 0 || r[0].Name != agents.DefaultName {
			return &l.Items[i]
		}
	}
	t.Fatal("no MPA of the built-in recommender")
	return nil
}

// lockedFake is an agent.Fake whose Observe holds mu, so that a test can
// read what it observed while the runner's worker runs.
type lockedFake struct {
	*agent.Fake
	mu *sync.Mutex
}

func (f *lockedFake) Observe(t agent.Transition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Fake.Observe(t)
}

// TestRunnerOfflineOwesUpdates: the offline updates of records that came
// while the replay held less than a minibatch are made up once it holds
// one, so the agent trains 2 per record in all, as on the records at once.
func TestRunnerOfflineOwesUpdates(t *testing.T) {
	c, ours, store, t0 := offlineWorld(t) // 40 records: 39 transitions
	batch64 := func(stateDim, actionDim int, _ bool, seed uint64) (agent.Agent, error) {
		return bootstrap.New(stateDim, actionDim, rand.New(rand.NewPCG(seed, 1)), bootstrap.WithBatch(64))
	}
	dir := t.TempDir()
	read := &rangeCount{Store: store}
	r, err := agents.New(c, autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) {
		return gym.Metrics{}, nil
	}), read, dir, agents.WithStep(time.Second), agents.WithFactory(batch64))
	require.NoError(t, err)
	ctx := start(t, r)
	// The first round saw 39 transitions, fewer than a minibatch of 64:
	// no update, no checkpoint. Then 40 more records.
	require.Eventually(t, func() bool { return read.n.Load() >= 2 }, 20*time.Second, 10*time.Millisecond, "a round after the first read the records")
	_, err = agents.ReadState(checkpointDir(dir, ours))
	require.Error(t, err, "nothing trained, nothing checkpointed")
	pol, err := autoscaler.PolicyOf(ours)
	require.NoError(t, err)
	space := gym.ActionSpace(pol.GymBounds())
	var more []trajectory.Step
	for i := 40; i < 80; i++ {
		st := make([]float64, gym.StateDim)
		st[0] = float64(i) / 80
		more = append(more, trajectory.Step{App: "ns/" + ours.Name, Episode: int64(i / 20), T: i % 20,
			Time: t0.Add(time.Duration(i) * time.Second), State: st, Action: []float64{2, space.Low[gym.ActCPU] + 0.5, space.High[gym.ActMemory] / 2},
			Reward: 1, Done: i%20 == 19, Stage: string(v1alpha1.StageOffline)})
	}
	require.NoError(t, store.Append(ctx, more...), "at once: a round sees all of them or none")
	var st agents.State
	require.Eventually(t, func() bool {
		st, err = agents.ReadState(checkpointDir(dir, ours))
		return err == nil && st.Updates > 0
	}, 20*time.Second, 50*time.Millisecond, "trained once the replay holds a minibatch")
	assert.Equal(t, 79, st.OfflineTransitions)
	assert.Equal(t, 2*79, st.Updates, "2 updates for each of the 79 transitions, the first 39's made up")
	assert.Zero(t, st.OfflineOwed, "nothing owed once the replay holds a minibatch")
}

// rangeCount counts the reads of the records.
type rangeCount struct {
	trajectory.Store
	n atomic.Int64
}

func (r *rangeCount) Range(ctx context.Context, app string, from, to time.Time) ([]trajectory.Trajectory, error) {
	defer r.n.Add(1)
	return r.Store.Range(ctx, app, from, to)
}
