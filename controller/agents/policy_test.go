package agents_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/gym"
)

// policyFactory is the runner's own factory with a small replay memory.
var policyFactory = agents.NewFactory(256)

// trainedAgent is an agent of kind for stateDim-wide states, trained
// updates updates on random transitions.
func trainedAgent(t *testing.T, kind string, stateDim, updates int, seed uint64) agent.Agent {
	t.Helper()
	ag, err := policyFactory(stateDim, gym.ActDim, kind == agents.KindBCQ, seed)
	require.NoError(t, err)
	rnd := rand.New(rand.NewPCG(seed, 9))
	vec := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rnd.Float64()*2 - 1
		}
		return v
	}
	for range 100 {
		ag.Observe(agent.Transition{State: vec(stateDim), Action: vec(gym.ActDim), Reward: rnd.Float64(), Next: vec(stateDim)})
	}
	for range updates {
		st, err := ag.Update()
		require.NoError(t, err)
		require.True(t, st.Updated)
	}
	return ag
}

// annotate gives the MPA the initial policy annotation and moves it to
// stage.
func annotate(t *testing.T, c client.Client, m *v1alpha1.MultidimPodAutoscaler, policy string, stage v1alpha1.AgentStage) {
	t.Helper()
	m.Annotations = map[string]string{agents.AnnotationInitialPolicy: policy}
	require.NoError(t, c.Update(t.Context(), m))
	m.Status.Agent = &v1alpha1.AgentStatus{Stage: stage, Episode: 2}
	require.NoError(t, c.Status().Update(t.Context(), m))
}

// checkpointAlgo is the algorithm and update count of the agent in a
// checkpoint file.
func checkpointAlgo(t *testing.T, path string) (string, int) {
	t.Helper()
	c, err := rl.ReadCheckpoint(path)
	require.NoError(t, err)
	var m struct {
		Algo    string `json:"algo"`
		Updates int    `json:"updates"`
	}
	require.NoError(t, c.Meta(&m))
	return m.Algo, m.Updates
}

// gather is the total of the named counter (with label value, if given).
func gather(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" || len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() == label {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

var noObserver = autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) { return gym.Metrics{}, nil })

// TestWritePolicyRoundTrip: a DDPG trained on its own, written with
// WritePolicy and loaded by the runner for an MPA annotated with it acts
// as it did (the same greedy actions); the runner checkpoints it as the
// MPA's own at once, and a restarted runner resumes that checkpoint even
// when the policy is gone.
func TestWritePolicyRoundTrip(t *testing.T) {
	trained := trainedAgent(t, agents.KindDDPG, gym.StateDim, 5, 7)
	policies := t.TempDir()
	require.NoError(t, agents.WritePolicy(filepath.Join(policies, "sim-ddpg"), trained, agents.KindDDPG, gym.StateDim, gym.Relative))
	info, err := agents.ReadPolicy(filepath.Join(policies, "sim-ddpg"))
	require.NoError(t, err)
	assert.Equal(t, agents.PolicyInfo{Kind: "ddpg", StateDim: gym.StateDim, ActionDim: 3, Actions: "relative"}, info)

	c, ours, store, _ := offlineWorld(t)
	annotate(t, c, ours, "sim-ddpg", v1alpha1.StageInitialized) // nothing trains: the weights stay the policy's
	var (
		mu   sync.Mutex
		made []agent.Agent
	)
	factory := func(stateDim, actionDim int, boot bool, seed uint64) (agent.Agent, error) {
		ag, err := policyFactory(stateDim, actionDim, boot, seed)
		mu.Lock()
		defer mu.Unlock()
		made = append(made, ag)
		return ag, err
	}
	dir := t.TempDir()
	ck := checkpointDir(dir, ours)
	run := func(until func(*prometheus.Registry) bool) *prometheus.Registry {
		reg := prometheus.NewRegistry()
		r, err := agents.New(c, noObserver, store, dir, agents.WithStep(time.Second), agents.WithFactory(factory),
			agents.WithPolicies(policies), agents.WithRegisterer(reg))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Start(ctx) }()
		require.Eventually(t, func() bool { return until(reg) }, 20*time.Second, 50*time.Millisecond)
		cancel()
		require.NoError(t, <-done)
		return reg
	}
	run(func(*prometheus.Registry) bool { _, err := agents.ReadState(ck); return err == nil })
	st, err := agents.ReadState(ck)
	require.NoError(t, err)
	assert.Equal(t, 5, st.Updates, "the policy's update count")
	assert.Equal(t, "relative", st.Actions)
	algo, updates := checkpointAlgo(t, filepath.Join(ck, "agent.ckpt"))
	assert.Equal(t, "ddpg", algo, "the MPA bootstraps (a fresh agent would be BCQ); its agent is the policy's DDPG")
	assert.Equal(t, 5, updates)

	resumed, err := policyFactory(gym.StateDim, gym.ActDim, false, 99)
	require.NoError(t, err)
	require.NoError(t, resumed.Load(filepath.Join(ck, "agent.ckpt")))
	fresh, err := policyFactory(gym.StateDim, gym.ActDim, false, 99)
	require.NoError(t, err)
	mu.Lock()
	loaded := made[len(made)-1]
	mu.Unlock()
	rnd := rand.New(rand.NewPCG(11, 12))
	for i := range 5 {
		s := make([]float64, gym.StateDim)
		for j := range s {
			s[j] = rnd.Float64()
		}
		want := trained.Act(make([]float64, gym.ActDim), s, false)
		assert.Equal(t, want, loaded.Act(make([]float64, gym.ActDim), s, false), "state %d: the runner's agent", i)
		assert.Equal(t, want, resumed.Act(make([]float64, gym.ActDim), s, false), "state %d: the runner's checkpoint", i)
		assert.NotEqual(t, want, fresh.Act(make([]float64, gym.ActDim), s, false), "state %d: a fresh agent acts otherwise", i)
	}

	// The policy is gone; the MPA's agent resumes its own checkpoint.
	require.NoError(t, os.RemoveAll(policies))
	reg := run(func(reg *prometheus.Registry) bool { return gather(t, reg, "aware_agents_resumed_total", "") == 1 })
	assert.Zero(t, gather(t, reg, "aware_agents_withheld_total", ""), "nothing withheld")
	var m v1alpha1.MultidimPodAutoscaler
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(ours), &m))
	assert.Nil(t, m.Status.Recommendation, "no recommendation withheld")
}

// TestRunnerInitialPolicy: an MPA annotated with an initial policy and
// without a checkpoint of its own starts from the policy; one whose
// policy cannot be used gets no agent (no fresh one in its place: the
// Offline MPA's fresh agent would be checkpointed), its recommendation is
// withheld with InitialPolicyUnreadable at every step and one Warning
// event names the annotation, the path and the cause; an MPA with a
// checkpoint of its own resumes it whatever the annotation says.
func TestRunnerInitialPolicy(t *testing.T) {
	write := func(kind string, stateDim, updates int, mapping gym.Mapping) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			require.NoError(t, agents.WritePolicy(filepath.Join(dir, "p"), trainedAgent(t, kind, stateDim, updates, 5), kind, stateDim, mapping))
		}
	}
	tests := []struct {
		name        string
		annotation  string
		noPolicies  bool                           // the runner has no policies folder
		setup       func(t *testing.T, dir string) // fills the policies folder
		own         bool                           // the MPA's agent has a checkpoint
		wantKind    string                         // loaded: the agent's kind
		wantUpdates int
		wantMsg     []string // withheld: the message names these (and the annotation)
	}{
		{name: "a DDPG policy for an MPA that bootstraps", annotation: "p", setup: write(agents.KindDDPG, gym.StateDim, 3, gym.Relative),
			wantKind: "ddpg", wantUpdates: 3},
		{name: "a BCQ policy for an MPA that bootstraps", annotation: "p", setup: write(agents.KindBCQ, gym.StateDim, 2, gym.Relative),
			wantKind: "bcq", wantUpdates: 2},
		{name: "missing folder", annotation: "absent", wantMsg: []string{"absent", "no such file"}},
		{name: "no policies folder", annotation: "p", noPolicies: true, setup: write(agents.KindDDPG, gym.StateDim, 0, gym.Relative),
			wantMsg: []string{"(no policies folder)", "--policies"}},
		{name: "state width", annotation: "p", setup: write(agents.KindDDPG, gym.StateDim+4, 0, gym.Relative),
			wantMsg: []string{"p/policy.json", "states are " + strconv.Itoa(gym.StateDim+4) + " wide, this runner feeds the agent " + strconv.Itoa(gym.StateDim)}},
		{name: "action mapping", annotation: "p", setup: write(agents.KindDDPG, gym.StateDim, 0, gym.Absolute),
			wantMsg: []string{"acts through absolute actions, this runner's agents act through relative"}},
		{name: "not a label", annotation: "../p", setup: write(agents.KindDDPG, gym.StateDim, 0, gym.Relative),
			wantMsg: []string{`"../p" is not a policy name`}},
		{name: "weights without policy.json", annotation: "p", setup: func(t *testing.T, dir string) {
			write(agents.KindDDPG, gym.StateDim, 0, gym.Relative)(t, dir)
			require.NoError(t, os.Remove(filepath.Join(dir, "p", "policy.json")))
		}, wantMsg: []string{"p/policy.json: no such file"}},
		{name: "policy.json names another kind", annotation: "p", setup: func(t *testing.T, dir string) {
			write(agents.KindDDPG, gym.StateDim, 0, gym.Relative)(t, dir)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "p", "policy.json"),
				[]byte(`{"kind":"bcq","stateDim":`+strconv.Itoa(gym.StateDim)+`,"actionDim":3,"actions":"relative"}`), 0o644))
		}, wantMsg: []string{"holds a ddpg agent", "not the bcq agent"}},
		{name: "own checkpoint wins over a missing policy", annotation: "absent", own: true, wantKind: "bcq", wantUpdates: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ours, store, _ := offlineWorld(t)
			annotate(t, c, ours, tc.annotation, v1alpha1.StageOffline)
			policies, dir := t.TempDir(), t.TempDir()
			if tc.setup != nil {
				tc.setup(t, policies)
			}
			ck := checkpointDir(dir, ours)
			if tc.own {
				ag, err := policyFactory(gym.StateDim, gym.ActDim, true, 3)
				require.NoError(t, err)
				require.NoError(t, os.MkdirAll(ck, 0o755))
				require.NoError(t, ag.Save(filepath.Join(ck, "agent.ckpt")))
				require.NoError(t, os.WriteFile(filepath.Join(ck, "state.json"), []byte(`{"uid":"`+string(ours.UID)+`","actions":"relative"}`), 0o644))
			}
			events := record.NewFakeRecorder(10)
			reg := prometheus.NewRegistry()
			opts := []agents.Option{agents.WithStep(time.Second), agents.WithFactory(policyFactory), agents.WithRecorder(events), agents.WithRegisterer(reg)}
			if !tc.noPolicies {
				opts = append(opts, agents.WithPolicies(policies))
			}
			r, err := agents.New(c, noObserver, store, dir, opts...)
			require.NoError(t, err)
			ctx := start(t, r)

			var m v1alpha1.MultidimPodAutoscaler
			if tc.wantKind != "" {
				resumes := 0.0
				if tc.own {
					resumes = 1
				}
				require.Eventually(t, func() bool {
					_, err := agents.ReadState(ck)
					return err == nil && gather(t, reg, "aware_agents_resumed_total", "") == resumes && gather(t, reg, "aware_agents_checkpoints_total", "") == 1-resumes
				}, 20*time.Second, 50*time.Millisecond, "the policy loaded and checkpointed as the MPA's own, or the MPA's own checkpoint resumed")
				algo, updates := checkpointAlgo(t, filepath.Join(ck, "agent.ckpt"))
				assert.Equal(t, tc.wantKind, algo)
				assert.Equal(t, tc.wantUpdates, updates)
				st, err := agents.ReadState(ck)
				require.NoError(t, err)
				assert.Equal(t, tc.wantUpdates, st.Updates)
				require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ours), &m))
				assert.Nil(t, m.Status.Recommendation, "nothing withheld")
				assert.Empty(t, events.Events, "no event")
				return
			}
			require.Eventually(t, func() bool {
				return gather(t, reg, "aware_agents_withheld_total", agents.ReasonInitialPolicyUnreadable) >= 3
			}, 20*time.Second, 50*time.Millisecond, "withheld at every step")
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ours), &m))
			require.NotNil(t, m.Status.Recommendation)
			require.NotNil(t, m.Status.Recommendation.Withheld)
			w := m.Status.Recommendation.Withheld
			assert.Equal(t, agents.ReasonInitialPolicyUnreadable, w.Reason)
			assert.WithinDuration(t, time.Now(), m.Status.Recommendation.Time.Time, 5*time.Second, "renewed every step")
			want := append([]string{agents.AnnotationInitialPolicy, "no agent starts until it can"}, tc.wantMsg...)
			if !tc.noPolicies {
				want = append(want, filepath.Join(policies, tc.annotation))
			}
			for _, s := range want {
				assert.Contains(t, w.Message, s)
			}
			require.Len(t, events.Events, 1, "one event per generation, not per step")
			e := <-events.Events
			assert.Contains(t, e, "Warning "+agents.ReasonInitialPolicyUnreadable)
			for _, s := range want {
				assert.Contains(t, e, s)
			}
			_, err = os.Stat(ck)
			assert.True(t, os.IsNotExist(err), "no agent, fresh or other, was started and checkpointed")
		})
	}
}

// TestWritePolicyRefuses: WritePolicy refuses what the runner could not
// load, naming what is wrong, and writes no policy.json then.
func TestWritePolicyRefuses(t *testing.T) {
	ddpgAgent := trainedAgent(t, agents.KindDDPG, gym.StateDim, 0, 1)
	tests := []struct {
		name     string
		ag       agent.Agent
		kind     string
		stateDim int
		mapping  gym.Mapping
		want     string
	}{
		{"unknown kind", ddpgAgent, "ppo", gym.StateDim, gym.Relative, `kind "ppo"`},
		{"another kind than the agent's", ddpgAgent, agents.KindBCQ, gym.StateDim, gym.Relative, "holds a ddpg agent"},
		{"another width than the agent's", ddpgAgent, agents.KindDDPG, gym.StateDim + 1, gym.Relative, "of " + strconv.Itoa(gym.StateDim) + "-wide states"},
		{"unknown mapping", ddpgAgent, agents.KindDDPG, gym.StateDim, gym.Mapping(7), "actions"},
		{"no agent", nil, agents.KindDDPG, gym.StateDim, gym.Relative, "nil agent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			err := agents.WritePolicy(dir, tc.ag, tc.kind, tc.stateDim, tc.mapping)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), dir)
			_, err = os.Stat(filepath.Join(dir, "policy.json"))
			assert.True(t, os.IsNotExist(err), "no policy.json")
		})
	}
}
