package manager_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/bootstrap"
	"github.com/aware-autoscaler/aware/controller/deploy"
	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/workloads/objstore"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// smallBatchFactory is agents.DefaultFactory with minibatches of 8, so that
// the few steps a test records suffice to train.
func smallBatchFactory(stateDim, actionDim int, boot bool, seed uint64) (agent.Agent, error) {
	rnd := rand.New(rand.NewPCG(seed, 0xA6E75))
	if boot {
		return bootstrap.New(stateDim, actionDim, rnd, bootstrap.WithBatch(8))
	}
	return ddpg.New(stateDim, actionDim, rnd, ddpg.WithGaussianNoise(0.05), ddpg.WithReplay(10_000, 8), ddpg.WithWarmUp(8))
}

// TestAgentLifecycleOnLocalControlPlane is the AWARE lifecycle on real
// parts: the local control plane, the digital twin scraped by a real
// Prometheus, a real InfluxDB, the controller and the agent runner each as
// its own process with its own generated ClusterRole. One MPA that
// bootstraps goes OFFLINE (HPA+VPA acts, the agent trains on its records)
// → ONLINE (the agent acts and trains) → SERVING (frozen) and back to
// ONLINE when the twin's load steps up 16-fold (the retraining detector).
// In each of the first three stages both processes are killed with
// SIGKILL and restarted: the stage, the episode count and the agent's
// weights carry on. The thresholds are the test's levers: each stage is
// held by a threshold no reward reaches until the kills are checked, then
// the threshold is lowered and the controller's Algorithm 1 moves the
// stage at its next episode end.
func TestAgentLifecycleOnLocalControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane, Prometheus, InfluxDB, the controller and the agent runner")
	}
	clustertest.RequireBinary(t, "prometheus")
	clustertest.RequireBinary(t, "influxd")
	bins := clustertest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 9*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const ns = "apps"
	const step = 2 * time.Second
	// The largest thresholds the API accepts: 2 per step × 5 steps, a
	// reward no episode reaches (it needs SLO met, CPU and memory fully
	// used at every step); any spread is within 1e9.
	const never, anySpread = 10, 1e9

	c, admin := upControlPlane(ctx, t, bins, dir, ns)
	ctrlKubeconfig := grantRole(ctx, t, c, admin, deploy.ControllerRole)
	agentsKubeconfig := grantRole(ctx, t, c, admin, deploy.AgentsRole)

	prof, gen := generatedApps(t, 10)
	// A latency SLO: a load step beyond the allocation's capacity shows in
	// the reward (a throughput SLO below capacity would not move).
	var apps []generator.App
	for _, a := range gen {
		if a.SLO.Kind == generator.LatencySLO {
			apps = append(apps, a)
			break
		}
	}
	require.NotEmpty(t, apps, "a latency-SLO app among the first 10")
	name := apps[0].Name()
	objs, err := generator.Build(apps[0], generator.ManifestOptions{Namespace: ns, Recommender: agents.DefaultName})
	require.NoError(t, err)
	boot := true
	objs.MPA.Spec.Agent.Bootstrap = &boot
	objs.MPA.Spec.Agent.EpisodeLength = 5
	objs.MPA.Spec.Agent.Thresholds = v1alpha1.RewardThresholds{Online: never, Serving: never, Variance: anySpread, Window: 2}
	for _, o := range []client.Object{objs.AppConfig, objs.Deployment, objs.MPA} {
		require.NoError(t, admin.Create(ctx, o), "%s", o.GetName())
	}
	tw, prom, influx := startTwinStack(ctx, t, c, dir, ns, apps, prof)
	s3, err := objstore.StartLocal(ctx, filepath.Join(dir, "s3"))
	require.NoError(t, err, "the S3-compatible store (versitygw, installed by ci/setup.sh)")
	t.Cleanup(func() { _ = s3.Stop() })
	s3cfg := s3.Config()

	ports := freePorts(t, 1)
	cc := childConfig{
		Kubeconfig: ctrlKubeconfig, Step: step,
		Sources:    manager.Sources{PrometheusURL: prom.URL(), StoreDir: filepath.Join(dir, "store"), InfluxURL: influx.URL()},
		WebhookDir: filepath.Join(dir, "certs"), WebhookURL: "https://127.0.0.1:" + itoa(ports[0]), WebhookPort: ports[0],
		MetricsAddr: "0",
	}
	ac := childConfig{
		Kubeconfig: agentsKubeconfig, Step: step, Agents: true, AgentsDir: filepath.Join(dir, "agents"), MetricsAddr: "0",
		// The stages' mechanics need a SERVING reward that holds still:
		// a frozen agent trained for a few dozen updates asks for the same
		// allocation every step with absolute actions, while with relative
		// ones its small constant output keeps moving the allocation and
		// the retraining detector, rightly, sends it back to ONLINE.
		Actions: "absolute",
		Sources: manager.Sources{PrometheusURL: prom.URL(), InfluxURL: influx.URL()},
		S3:      &s3cfg,
	}
	logs := 0
	start := func() (*controllerProc, *controllerProc) {
		logs++
		return startController(t, cc, filepath.Join(dir, "controller-"+itoa(logs)+".log")),
			startController(t, ac, filepath.Join(dir, "agents-"+itoa(logs)+".log"))
	}
	ctl, run := start()
	tails := func() string { return "controller:\n" + ctl.tail() + "\nagents:\n" + run.tail() }
	// restart SIGKILLs both processes; with loseDisk the runner's
	// checkpoint folder goes too (a rescheduled pod), and it resumes from
	// the object store's copy.
	restart := func(loseDisk bool) {
		t.Helper()
		ctl.kill(t)
		run.kill(t)
		if loseDisk {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "agents", "checkpoints")))
		}
		ctl, run = start()
	}

	mpa := func() *v1alpha1.MultidimPodAutoscaler {
		var m v1alpha1.MultidimPodAutoscaler
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m))
		return &m
	}
	stage := func() v1alpha1.AgentStage {
		if a := mpa().Status.Agent; a != nil {
			return a.Stage
		}
		return ""
	}
	thresholds := func(change func(*v1alpha1.RewardThresholds)) {
		t.Helper()
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			m := mpa()
			change(&m.Spec.Agent.Thresholds)
			return admin.Update(ctx, m)
		}))
	}
	ckpt := filepath.Join(dir, "agents", "checkpoints", ns, name+"-"+string(mpa().UID))
	state := func() agents.State {
		st, _ := agents.ReadState(ckpt)
		return st
	}
	waitState := func(what string, cond func(agents.State) bool, timeout time.Duration) agents.State {
		t.Helper()
		if !assert.Eventually(t, func() bool { return cond(state()) }, timeout, 500*time.Millisecond, what) {
			t.Fatalf("state %+v, MPA status %+v\n%s", state(), mpa().Status.Agent, tails())
		}
		return state()
	}
	waitStage := func(want v1alpha1.AgentStage, timeout time.Duration) {
		t.Helper()
		if !assert.Eventually(t, func() bool { return stage() == want }, timeout, 500*time.Millisecond, "stage %s", want) {
			t.Fatalf("stage %s, status %+v, conditions %+v\n%s", stage(), mpa().Status.Agent, mpa().Status.Conditions, tails())
		}
	}
	// resumed checks that both processes carried on after a restart: the
	// stage, the episodes and the agent's update count (a runner that lost
	// the weights would count updates from zero).
	resumed := func(wantStage v1alpha1.AgentStage, episode int64) {
		t.Helper()
		assert.Equal(t, wantStage, stage(), "the stage survives SIGKILL")
		assert.GreaterOrEqual(t, mpa().Status.Agent.Episode, episode, "episodes continue")
		logged(t, run, "resumed from checkpoint", "the runner loaded its checkpoint")
	}

	// OFFLINE: HPA+VPA acts and the agent trains on its records.
	waitStage(v1alpha1.StageOffline, 60*time.Second)
	before := waitState("the agent trained on HPA+VPA's records", func(s agents.State) bool {
		return s.Stage == string(v1alpha1.StageOffline) && s.Updates > 0
	}, 90*time.Second)
	assert.Equal(t, "hpa+vpa", mpa().Status.Recommendation.Recommender, "the fallback acts while OFFLINE")
	episode := mpa().Status.Agent.Episode
	restart(false)
	after := waitState("offline training goes on after SIGKILL", func(s agents.State) bool {
		return s.Saved.After(before.Saved)
	}, 60*time.Second)
	resumed(v1alpha1.StageOffline, episode)
	assert.Greater(t, after.Updates, before.Updates, "updates continue from the checkpoint's")
	assert.False(t, after.RecordsUntil.Before(before.RecordsUntil), "records already trained on are not trained on again")

	// ONLINE: the agent acts and trains.
	thresholds(func(th *v1alpha1.RewardThresholds) { th.Online = 0.001 })
	waitStage(v1alpha1.StageOnline, 60*time.Second)
	before = waitState("an ONLINE episode acted", func(s agents.State) bool {
		return s.Stage == string(v1alpha1.StageOnline) && s.Episodes >= 1
	}, 120*time.Second)
	rec := mpa().Status.Recommendation
	require.NotNil(t, rec)
	assert.Equal(t, agents.DefaultName, rec.Recommender, "the agent's recommendation is in force")
	assert.Nil(t, rec.Withheld)
	episode = mpa().Status.Agent.Episode
	restart(false)
	after = waitState("an ONLINE episode after SIGKILL", func(s agents.State) bool {
		return s.Episodes > before.Episodes
	}, 120*time.Second)
	resumed(v1alpha1.StageOnline, episode)
	assert.Greater(t, after.Updates, before.Updates, "training continues from the checkpoint's update count")

	// SERVING: the frozen policy acts.
	thresholds(func(th *v1alpha1.RewardThresholds) { th.Serving = 0.001 })
	waitStage(v1alpha1.StageServing, 60*time.Second)
	before = waitState("the runner saw SERVING", func(s agents.State) bool { return s.Stage == string(v1alpha1.StageServing) }, 60*time.Second)
	frozen := weights(t, filepath.Join(ckpt, "agent.ckpt"))
	logged(t, run, "serving with the policy alone", "a SERVING agent keeps its policy alone")
	episode = mpa().Status.Agent.Episode
	restart(true)
	after = waitState("a SERVING episode after SIGKILL and the loss of the runner's disk", func(s agents.State) bool {
		return s.Episodes > before.Episodes
	}, 120*time.Second)
	resumed(v1alpha1.StageServing, episode)
	logged(t, run, "checkpoint restored from the object store", "the runner's disk was lost")
	assert.Equal(t, before.Updates, after.Updates, "no training while SERVING")
	assert.Equal(t, frozen, weights(t, filepath.Join(ckpt, "agent.ckpt")), "the serving weights are the ones frozen before the kill")
	logged(t, run, "serving with the policy alone", "a SERVING agent resumed from its checkpoint keeps its policy alone")

	// The retraining detector: the load steps up 64-fold; the frozen
	// policy's reward drops below 85 % of its serving level (the spread
	// of serving episodes is about 1 % of it).
	level := *mpa().Status.Agent.RecentReward
	st0 := tw.Status()[0]
	t.Logf("serving: recent reward %.2f; twin: %d × (%.2f cores, %.0f MiB), arrival %.1f/s, p99 %.3fs (SLO %v)", level,
		st0.Allocation.Replicas, st0.Allocation.CPU, st0.Allocation.Memory/(1<<20), st0.Metrics.ArrivalRate, st0.Metrics.LatencyP99, apps[0].SLO)
	thresholds(func(th *v1alpha1.RewardThresholds) { th.Serving = 0.85 * level })
	for range 3 {
		require.NoError(t, tw.Inject(apps[0].Spec.Name, sim.LoadHigh))
	}
	logged := time.Now()
	if !assert.Eventually(t, func() bool {
		m := mpa()
		if time.Since(logged) > 5*time.Second && m.Status.Agent.RecentReward != nil {
			logged = time.Now()
			st := tw.Status()[0]
			t.Logf("episode %d: recent reward %.2f (std %.2f); twin: %d × (%.2f cores, %.0f MiB), arrival %.1f/s, processed %.1f/s, p99 %.3fs, cpu %.2f",
				m.Status.Agent.Episode, *m.Status.Agent.RecentReward, *m.Status.Agent.RecentRewardStdDev, st.Allocation.Replicas, st.Allocation.CPU,
				st.Allocation.Memory/(1<<20), st.Metrics.ArrivalRate, st.Metrics.ProcessedRate, st.Metrics.LatencyP99, st.Metrics.CPUUsage)
		}
		return stage() == v1alpha1.StageOnline
	}, 180*time.Second, 500*time.Millisecond, "the retraining detector fired") {
		t.Fatalf("status %+v\n%s", mpa().Status.Agent, tails())
	}
	cond := meta.FindStatusCondition(mpa().Status.Conditions, v1alpha1.ConditionAgentServing)
	require.NotNil(t, cond)
	assert.Equal(t, autoscaler.ReasonRewardDropped, cond.Reason, "%s", cond.Message)
	t.Logf("serving reward %.2f per episode; after the load step: %s", level, cond.Message)
	waitState("training resumes from the serving weights", func(s agents.State) bool {
		return s.Stage == string(v1alpha1.StageOnline) && s.Updates > after.Updates
	}, 120*time.Second)
	var events corev1.EventList
	require.NoError(t, admin.List(ctx, &events, client.InNamespace(ns)))
	var moves []string
	for _, e := range events.Items {
		if e.Reason == "StageChanged" && e.InvolvedObject.Name == name {
			move, _, _ := strings.Cut(e.Message, " (")
			moves = append(moves, move)
		}
	}
	var want []string
	for _, mv := range [][2]v1alpha1.AgentStage{{v1alpha1.StageInitialized, v1alpha1.StageOffline}, {v1alpha1.StageOffline, v1alpha1.StageOnline},
		{v1alpha1.StageOnline, v1alpha1.StageServing}, {v1alpha1.StageServing, v1alpha1.StageOnline}} {
		want = append(want, "agent stage "+string(mv[0])+" → "+string(mv[1]))
	}
	assert.Subset(t, moves, want, "an Event per transition")
}

// logged waits for a line of p's log (this start's) that contains want.
func logged(t *testing.T, p *controllerProc, want, msg string) {
	t.Helper()
	assert.Eventually(t, func() bool {
		b, _ := os.ReadFile(p.log)
		return strings.Contains(string(b), want)
	}, 30*time.Second, 200*time.Millisecond, "%s: %q in the log, which ends\n%s", msg, want, p.tail())
}

// weights reads every entry (networks and optimiser state) of an agent
// checkpoint.
func weights(t *testing.T, path string) map[string][]float64 {
	t.Helper()
	c, err := rl.ReadCheckpoint(path)
	require.NoError(t, err)
	out := map[string][]float64{}
	for _, n := range c.Names() {
		v, _ := c.Get(n)
		out[n] = v
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }
