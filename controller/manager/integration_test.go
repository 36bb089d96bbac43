package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/admission"
	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/deploy"
	"github.com/aware-autoscaler/aware/controller/manager"
	"github.com/aware-autoscaler/aware/controller/mpaenv"
	"github.com/aware-autoscaler/aware/controller/telemetry"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/gym/remote"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/infra/cluster/clustertest"
	"github.com/aware-autoscaler/aware/infra/influxdb"
	"github.com/aware-autoscaler/aware/infra/prometheus"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/objstore"
	"github.com/aware-autoscaler/aware/workloads/twin"
)

// childEnv carries a controller configuration to a re-executed test
// binary, so that the test can SIGKILL a real controller process.
const childEnv = "AWARE_TEST_CONTROLLER"

type childConfig struct {
	Kubeconfig  string
	Sources     manager.Sources
	Step        time.Duration
	WebhookDir  string
	WebhookURL  string
	WebhookPort int
	MetricsAddr string
	// Agents runs the agent runner (`aware agents`) with its checkpoints
	// and spool in AgentsDir instead of the controller.
	Agents    bool
	AgentsDir string
	// Actions is the runner's gym.Mapping name (default relative).
	Actions string `json:",omitempty"`
	// S3, when set, is the object store the runner copies its checkpoints
	// to (every step at most).
	S3 *objstore.Config `json:",omitempty"`
	// Shard runs the controller as a shard replica, without the webhook
	// (replicas would overwrite each other's webhook configuration);
	// StepLog, when set, gets a line per MPA step: the round's Unix
	// seconds, the MPA and the replica.
	Shard   manager.Shard `json:",omitempty"`
	StepLog string        `json:",omitempty"`
}

func TestMain(m *testing.M) {
	if raw := os.Getenv(childEnv); raw != "" {
		os.Exit(runChild(raw))
	}
	os.Exit(m.Run())
}

// runChild is `aware controller` in a test binary.
func runChild(raw string) int {
	var cc childConfig
	if err := json.Unmarshal([]byte(raw), &cc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rc, err := clientcmd.BuildConfigFromFlags("", cc.Kubeconfig)
	if err != nil {
		log.Error("kubeconfig", "err", err)
		return 1
	}
	rc.QPS, rc.Burst = 200, 400
	// SIGTERM stops it gracefully, as `aware controller`.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if cc.Agents {
		mapping := gym.Relative
		if cc.Actions != "" {
			if mapping, err = gym.ParseMapping(cc.Actions); err != nil {
				log.Error("actions", "err", err)
				return 1
			}
		}
		opts := []agents.Option{agents.WithStep(cc.Step), agents.WithFactory(smallBatchFactory),
			agents.WithEnvOptions(mpaenv.WithActuationTimeout(30 * time.Second)), agents.WithActions(mapping)}
		if cc.S3 != nil {
			objs, err := objstore.Connect(ctx, *cc.S3)
			if err != nil {
				log.Error("object store", "err", err)
				return 1
			}
			opts = append(opts, agents.WithObjects(objs, "agents", cc.Step))
		}
		err = agents.Run(ctx, agents.Config{REST: rc, PrometheusURL: cc.Sources.PrometheusURL, InfluxURL: cc.Sources.InfluxURL,
			Dir: cc.AgentsDir, MetricsAddr: cc.MetricsAddr, ProbeAddr: "0", Log: log, Options: opts})
		log.Error("agent runner stopped", "err", err)
		return 1
	}
	obs, store, err := cc.Sources.Open(ctx, log)
	if err != nil {
		log.Error("sources", "err", err)
		return 1
	}
	if cc.StepLog != "" {
		if obs, err = logSteps(obs, cc.StepLog, cc.Step, cc.Shard.Identity); err != nil {
			log.Error("step log", "err", err)
			return 1
		}
	}
	mc := manager.Config{REST: rc, Step: cc.Step, Observer: obs, Store: store, Log: log, MetricsAddr: cc.MetricsAddr, Shard: cc.Shard}
	if !cc.Shard.Enabled {
		mc.Webhook = manager.Webhook{Enabled: true, Host: "127.0.0.1", Port: cc.WebhookPort, CertDir: cc.WebhookDir,
			Hosts: []string{"127.0.0.1"}, Endpoint: admission.Endpoint{URL: cc.WebhookURL}}
	}
	err = manager.Run(ctx, mc)
	if cerr := store.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil && ctx.Err() != nil {
		log.Info("controller stopped")
		return 0
	}
	log.Error("controller stopped", "err", err)
	return 1
}

// TestControllerOnLocalControlPlane runs the whole path on real parts:
// the local control plane (kwok nodes), the digital twin exporting the
// simulated apps' metrics, a real Prometheus scraping it, a real InfluxDB
// for trajectories and the controller as its own process with only its
// ClusterRole's rights.
func TestControllerOnLocalControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane, Prometheus, InfluxDB and the controller")
	}
	clustertest.RequireBinary(t, "prometheus")
	clustertest.RequireBinary(t, "influxd")
	bins := clustertest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const ns = "apps"
	const step = 2 * time.Second

	c, admin := upControlPlane(ctx, t, bins, dir, ns)
	ctrlKubeconfig := grantRole(ctx, t, c, admin, deploy.ControllerRole)
	envKubeconfig := grantRole(ctx, t, c, admin, deploy.EnvRole)

	// Ten generated apps with their MPAs (default recommender).
	prof, apps := generatedApps(t, 10)
	for _, a := range apps {
		objs, err := generator.Build(a, generator.ManifestOptions{Namespace: ns, Recommender: v1alpha1.DefaultRecommenderName})
		require.NoError(t, err)
		objs.MPA.Spec.Agent.EpisodeLength = 5
		objs.MPA.Spec.Agent.Thresholds = v1alpha1.RewardThresholds{Online: 0.1, Serving: 9, Variance: 5, Window: 1}
		for _, o := range []client.Object{objs.AppConfig, objs.Deployment, objs.MPA} {
			require.NoError(t, admin.Create(ctx, o), "%s", o.GetName())
		}
	}

	_, prom, influx := startTwinStack(ctx, t, c, dir, ns, apps, prof)

	ports := freePorts(t, 2)
	cc := childConfig{
		Kubeconfig: ctrlKubeconfig, Step: step,
		Sources:    manager.Sources{PrometheusURL: prom.URL(), StoreDir: filepath.Join(dir, "store"), InfluxURL: influx.URL()},
		WebhookDir: filepath.Join(dir, "certs"), WebhookURL: fmt.Sprintf("https://127.0.0.1:%d", ports[0]), WebhookPort: ports[0],
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
	}
	ctl := startController(t, cc, filepath.Join(dir, "controller-1.log"))

	mpa := func(name string) *v1alpha1.MultidimPodAutoscaler {
		var m v1alpha1.MultidimPodAutoscaler
		require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m))
		return &m
	}
	// updateMPA changes an MPA's spec the way a user's tooling must: the
	// controller writes status concurrently, which moves the
	// resourceVersion, so a read-modify-write retries on conflict.
	updateMPA := func(name string, change func(*v1alpha1.MultidimPodAutoscaler)) {
		t.Helper()
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			m := mpa(name)
			change(m)
			return admin.Update(ctx, m)
		}))
	}
	pods := func(app string) []corev1.Pod {
		var l corev1.PodList
		require.NoError(t, admin.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": app}))
		var out []corev1.Pod
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
		return out
	}

	t.Run("every MPA gets recommendations", func(t *testing.T) {
		require.Eventually(t, func() bool {
			for _, a := range apps {
				m := mpa(a.Name())
				cond := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionMetricsAvailable)
				if m.Status.Recommendation == nil || cond == nil || cond.Status != metav1.ConditionTrue {
					return false
				}
			}
			return true
		}, 90*time.Second, time.Second, "recommendations for all 10 MPAs\n%s", ctl.tail())
		var owners []string
		for _, f := range mpa(apps[0].Name()).ManagedFields {
			if f.Subresource == "status" {
				owners = append(owners, f.Manager)
			}
		}
		assert.Equal(t, []string{manager.FieldOwner}, owners, "the controller writes status as its field owner, whatever its binary is called")
	})

	t.Run("replicas change through the scale subresource", func(t *testing.T) {
		name := apps[0].Name()
		want := max(mpa(name).Status.CurrentReplicas, 1) + 2
		updateMPA(name, func(m *v1alpha1.MultidimPodAutoscaler) { m.Spec.Constraints.MinReplicas = &want })
		require.Eventually(t, func() bool {
			m := mpa(name)
			return m.Status.DesiredReplicas >= want && m.Status.LastScaleTime != nil && len(pods(name)) >= int(want)
		}, 30*time.Second, 500*time.Millisecond, "scale to %d\n%s", want, ctl.tail())
	})

	t.Run("resources change in place and new pods get them", func(t *testing.T) {
		name := apps[1].Name()
		before := map[string]string{}
		var cpu resource.Quantity
		for _, p := range pods(name) {
			before[p.Name] = string(p.UID)
			cpu = p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
		}
		require.NotEmpty(t, before)
		floor := resource.NewMilliQuantity(cpu.MilliValue()+300, resource.DecimalSI)
		updateMPA(name, func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.ResourcePolicy.ContainerPolicies[0].MinAllowed[corev1.ResourceCPU] = *floor
		})
		require.Eventually(t, func() bool {
			for _, p := range pods(name) {
				if before[p.Name] != string(p.UID) {
					return false // a pod was replaced: not in place
				}
				got := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
				if got.Cmp(*floor) < 0 || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].Resources == nil {
					return false
				}
				if applied := p.Status.ContainerStatuses[0].Resources.Limits[corev1.ResourceCPU]; applied.Cmp(*floor) < 0 {
					return false
				}
			}
			c := meta.FindStatusCondition(mpa(name).Status.Conditions, v1alpha1.ConditionResizedInPlace)
			return c != nil && c.Status == metav1.ConditionTrue
		}, 30*time.Second, 500*time.Millisecond, "in-place resize to ≥ %s\n%s", floor, ctl.tail())

		// A pod created now comes from the unchanged template; the webhook
		// sizes it like the resized ones.
		n := int32(len(before)) + 1
		updateMPA(name, func(m *v1alpha1.MultidimPodAutoscaler) { m.Spec.Constraints.MinReplicas = &n })
		require.Eventually(t, func() bool {
			for _, p := range pods(name) {
				if _, old := before[p.Name]; old {
					continue
				}
				got := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
				return got.Cmp(*floor) >= 0 && p.Annotations[admission.SizedByAnnotation] == name
			}
			return false
		}, 30*time.Second, 500*time.Millisecond, "new pod sized by the webhook\n%s", ctl.tail())
	})

	t.Run("the gym environment over an MPA drives its target", func(t *testing.T) {
		// The MPA of apps[2] gets an external recommender that acts at
		// once (no bootstrapping), one replica per step at most.
		name := apps[2].Name()
		bootstrap, one := false, int32(1)
		updateMPA(name, func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: "aware"}}
			m.Spec.Agent.Bootstrap = &bootstrap
			m.Spec.Agent.Actions.MaxReplicaChange = &one
		})

		src, err := telemetry.New(prom.URL())
		require.NoError(t, err)
		envClient := kubeClient(t, envKubeconfig)
		env, err := mpaenv.New(ctx, envClient, client.ObjectKey{Namespace: ns, Name: name}, manager.NewSnapshotObserver(src),
			mpaenv.WithStep(step), mpaenv.WithActuationTimeout(30*time.Second), mpaenv.WithEpisode(2))
		require.NoError(t, err)
		// Driven over the remote API, as an agent in another language would.
		srv, err := remote.NewServer(map[string]gym.Env{name: env}, "test-token")
		require.NoError(t, err)
		hs := httptest.NewServer(srv)
		defer hs.Close()
		e, err := remote.Dial(ctx, hs.URL, name, "test-token")
		require.NoError(t, err)

		obs, info, err := e.Reset(ctx, 0)
		require.NoError(t, err, "%s", ctl.tail())
		require.NoError(t, e.ObservationSpace().Contains(obs))
		cur := info.Metrics
		want := cur.Replicas + 1
		cpu := math.Round((cur.CPULimit+0.1)*1000) / 1000
		if cpu > e.ActionSpace().High[gym.ActCPU] {
			cpu = math.Round((cur.CPULimit-0.1)*1000) / 1000
		}
		for i, act := range [][]float64{{float64(want + 3), cpu, cur.MemoryLimit}, {float64(want), cpu, cur.MemoryLimit}} {
			obs, reward, _, trunc, info, err := e.Step(ctx, act)
			require.NoError(t, err, "step %d\n%s", i+1, ctl.tail())
			require.NoError(t, e.ObservationSpace().Contains(obs))
			assert.Equal(t, want, info.Metrics.Replicas, "step %d: one replica more (maxReplicaChange 1), then stay", i+1)
			assert.InDelta(t, cpu, info.Metrics.CPULimit, 1e-3, "step %d", i+1)
			assert.Equal(t, want, info.Metrics.ReadyReplicas, "step %d: the twin reports the pods ready", i+1)
			assert.Greater(t, info.Metrics.ArrivalRate, 0.0, "step %d: load measured through Prometheus", i+1)
			assert.True(t, reward > 0 && reward <= 2, "step %d: reward %g in (0, 2]", i+1, reward)
			assert.Equal(t, i == 1, trunc, "step %d: episode of 2", i+1)
		}
		got := pods(name)
		require.Len(t, got, want)
		for _, p := range got {
			lim := p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
			assert.Equal(t, int64(math.Round(cpu*1000)), lim.MilliValue(), "pod %s", p.Name)
		}
		m := mpa(name)
		require.NotNil(t, m.Status.Recommendation)
		assert.Equal(t, "aware", m.Status.Recommendation.Recommender)
		assert.Equal(t, int32(want), m.Status.DesiredReplicas)
	})

	t.Run("an invalid MPA is rejected with a clear message", func(t *testing.T) {
		bad := mpa(apps[2].Name()).DeepCopy()
		bad.ObjectMeta = metav1.ObjectMeta{Name: "bad", Namespace: ns}
		bad.Status = v1alpha1.MultidimPodAutoscalerStatus{}
		alpha := 2.0
		bad.Spec.Agent.Alpha = &alpha
		minR := int32(30)
		bad.Spec.Constraints.MinReplicas = &minR
		err := admin.Create(ctx, bad)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "spec.agent.alpha")
		assert.Contains(t, err.Error(), "minReplicas must not exceed maxReplicas")
	})

	t.Run("trajectories written while InfluxDB is down appear after it restarts", func(t *testing.T) {
		app := ns + "/" + apps[3].Name()
		require.NoError(t, influx.Stop())
		down := time.Now()
		time.Sleep(4 * step)
		up := time.Now()
		require.NoError(t, influx.Restart(ctx))
		reader, err := trajectory.OpenInflux(ctx, influx.URL(), filepath.Join(dir, "reader-spool"))
		require.NoError(t, err)
		defer reader.Close()
		require.Eventually(t, func() bool {
			tr, err := reader.Range(ctx, app, down, up)
			if err != nil {
				return false
			}
			n := 0
			for _, x := range tr {
				n += len(x.Steps)
			}
			return n >= 2
		}, 60*time.Second, time.Second, "steps of %s between %s and %s\n%s", app, down, up, ctl.tail())
	})

	t.Run("a controller killed with SIGKILL continues from its persisted stage", func(t *testing.T) {
		name := apps[4].Name()
		require.Eventually(t, func() bool {
			a := mpa(name).Status.Agent
			return a != nil && a.Episode >= 1 && a.Stage == v1alpha1.StageOnline
		}, 60*time.Second, 500*time.Millisecond, "an episode completed and the agent went online\n%s", ctl.tail())
		checkpoint := func() *v1alpha1.MultidimPodAutoscalerCheckpoint {
			var ck v1alpha1.MultidimPodAutoscalerCheckpoint
			require.NoError(t, admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ck))
			return &ck
		}
		require.Equal(t, mpa(name).UID, checkpoint().Spec.MPAUID)
		ctl.kill(t)
		saved := checkpoint()
		require.Greater(t, saved.Status.Steps, int64(2*manager.DefaultCheckpointEvery))
		before := mpa(name).Status.Agent.DeepCopy()
		ctl = startController(t, cc, filepath.Join(dir, "controller-2.log"))
		// The built-in recommender's history survives the kill: restored
		// from its checkpoint (written every 4 steps), it goes on counting
		// steps where it was instead of from one.
		logged(t, ctl, "recommender restored from its checkpoint", "the HPA+VPA history is restored")
		require.Eventually(t, func() bool { return checkpoint().ResourceVersion != saved.ResourceVersion },
			30*time.Second, 500*time.Millisecond, "the checkpoint is written again\n%s", ctl.tail())
		assert.Greater(t, checkpoint().Status.Steps, saved.Status.Steps, "steps go on from the checkpoint's, not from one")
		if !assert.Eventually(t, func() bool {
			a := mpa(name).Status.Agent
			return a.Episode > before.Episode
		}, 60*time.Second, 500*time.Millisecond, "an episode completed after the restart") {
			t.Fatalf("status %+v\nconditions %+v\n%s", mpa(name).Status.Agent, mpa(name).Status.Conditions, ctl.tail())
		}
		after := mpa(name).Status.Agent
		assert.Equal(t, v1alpha1.StageOnline, after.Stage, "the stage survives the restart")
		assert.GreaterOrEqual(t, after.Episode, before.Episode, "episodes continue")

		// Stopped gracefully (SIGTERM, as a rolling update does), the
		// controller writes the checkpoints of what stepped since the last
		// periodic one before it exits, and exits 0.
		sent := time.Now()
		require.NoError(t, ctl.cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, ctl.cmd.Wait(), "a clean exit\n%s", ctl.tail())
		logged(t, ctl, "checkpoints written at shutdown", "the checkpoints are flushed")
		assert.NotContains(t, ctl.tail(), "checkpoints not all written")
		assert.False(t, checkpoint().Status.LastUpdateTime.Time.Before(sent.Truncate(time.Second).Add(-2*time.Second)),
			"the checkpoint is of the controller's last step (written %s, SIGTERM at %s)", checkpoint().Status.LastUpdateTime, sent)
	})
}

// upControlPlane starts the local control plane with two kwok nodes (shut
// down when the test ends), installs the MPA CRD and creates namespace ns;
// it returns the cluster and an admin client.
func upControlPlane(ctx context.Context, t *testing.T, bins cluster.Binaries, dir, ns string) (*cluster.Cluster, client.Client) {
	t.Helper()
	c, err := cluster.Up(ctx, cluster.Config{Dir: filepath.Join(dir, "cluster"), Binaries: bins, Nodes: 2})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Down(context.Background()) })
	admin := kubeClient(t, c.Kubeconfig)
	require.NoError(t, deploy.InstallCRDs(ctx, admin, time.Minute))
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	return c, admin
}

// generatedApps is the calibration profile and the first n applications of
// the default pool.
func generatedApps(t *testing.T, n int) (*calibration.Profile, []generator.App) {
	t.Helper()
	prof, err := calibration.Default()
	require.NoError(t, err)
	opts := generator.DefaultOptions()
	opts.Apps = n
	apps, err := generator.Generate(opts, prof)
	require.NoError(t, err)
	return prof, apps
}

// startTwinStack starts the digital twin of apps in namespace ns, a real
// Prometheus scraping it and a real InfluxDB, all stopped when the test
// ends.
func startTwinStack(ctx context.Context, t *testing.T, c *cluster.Cluster, dir, ns string, apps []generator.App, prof *calibration.Profile) (*twin.Twin, *prometheus.Local, *influxdb.Local) {
	t.Helper()
	shapes, err := generator.LoadShapes("", 10*time.Second, 1)
	require.NoError(t, err)
	simApps, err := generator.SimApps(apps, shapes)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(restConfig(t, c.Kubeconfig))
	require.NoError(t, err)
	tw, err := twin.New(cs, simApps, prof, twin.WithNamespace(ns), twin.WithTick(time.Second))
	require.NoError(t, err)
	twinCtx, stopTwin := context.WithCancel(ctx)
	t.Cleanup(stopTwin)
	go func() { _ = tw.Run(twinCtx) }()
	srv := httptest.NewServer(tw.Handler())
	t.Cleanup(srv.Close)
	prom, err := prometheus.Start(ctx, filepath.Join(dir, "prometheus"), prometheus.WithScrapeInterval(time.Second),
		prometheus.WithStaticTarget("twin", strings.TrimPrefix(srv.URL, "http://"), "/metrics"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = prom.Stop() })
	require.NoError(t, prom.WaitForTarget(ctx, "twin"))

	influx, err := influxdb.Start(ctx, filepath.Join(dir, "influxdb"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = influx.Stop() })
	return tw, prom, influx
}

// controllerProc is a controller child process.
type controllerProc struct {
	cmd *exec.Cmd
	log string
}

func startController(t *testing.T, cc childConfig, logPath string) *controllerProc {
	t.Helper()
	raw, err := json.Marshal(cc)
	require.NoError(t, err)
	f, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(t, cmd.Start())
	p := &controllerProc{cmd: cmd, log: logPath}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		f.Close()
	})
	return p
}

func (p *controllerProc) kill(t *testing.T) {
	require.NoError(t, p.cmd.Process.Kill()) // SIGKILL
	_ = p.cmd.Wait()
}

// tail is the end of the controller's log, for failure messages.
func (p *controllerProc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func restConfig(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	rc.QPS, rc.Burst = 100, 200
	return rc
}

func kubeClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	s, err := manager.Scheme()
	require.NoError(t, err)
	require.NoError(t, apiextensionsv1.AddToScheme(s))
	c, err := client.New(restConfig(t, kubeconfig), client.Options{Scheme: s})
	require.NoError(t, err)
	return c
}

// grantRole binds a generated ClusterRole to a user of the same name and
// returns that user's kubeconfig: the controller and the environment run
// with exactly their roles, and the test fails if the API server refused
// any of that user's requests (its audit log, read after the test's other
// cleanups have stopped the components).
func grantRole(ctx context.Context, t *testing.T, c *cluster.Cluster, admin client.Client, get func() (*rbacv1.ClusterRole, error)) string {
	t.Helper()
	role, err := get()
	require.NoError(t, err)
	since := time.Now()
	t.Cleanup(func() {
		evs := clustertest.RequireNoForbidden(t, c, role.Name, since)
		t.Logf("%s: grants no request of this test used: %v", role.Name, clustertest.UnusedGrants(role, cluster.Used(evs)))
	})
	require.NoError(t, deploy.Grant(ctx, admin, role, role.Name))
	path, err := c.UserKubeconfig(role.Name, role.Name)
	require.NoError(t, err)
	return path
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	out := make([]int, 0, n)
	for range n {
		srv := httptest.NewServer(nil)
		var port int
		_, err := fmt.Sscanf(srv.URL[strings.LastIndex(srv.URL, ":")+1:], "%d", &port)
		srv.Close()
		require.NoError(t, err)
		out = append(out, port)
	}
	return out
}
