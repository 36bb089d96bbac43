package mpaenv_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/mpaenv"
	scaletarget "github.com/aware-autoscaler/aware/controller/target"
	"github.com/aware-autoscaler/aware/gym"
)

const step = 200 * time.Millisecond

var key = types.NamespacedName{Namespace: "ns", Name: "app"}

func ptr[T any](v T) *T { return &v }

// testMPA is an MPA whose external recommender "aware" acts from the
// start, one replica per step at most.
func testMPA() *v1alpha1.MultidimPodAutoscaler {
	mode := v1alpha1.UpdateModeInPlaceOrRecreate
	return &v1alpha1.MultidimPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", Generation: 1},
		Spec: v1alpha1.MultidimPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "app"},
			UpdatePolicy:   &v1alpha1.PodUpdatePolicy{UpdateMode: &mode},
			Recommenders:   []v1alpha1.RecommenderSelector{{Name: "aware"}},
			Constraints:    &v1alpha1.ScalingConstraints{MinReplicas: ptr(int32(1)), MaxReplicas: 10},
			ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
				ContainerName: "workload",
				MinAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("128m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			}}},
			Agent: &v1alpha1.AgentProfile{
				SLO: v1alpha1.ProfileSLO{LatencyP99Seconds: 0.05}, Alpha: ptr(0.7), Bootstrap: ptr(false), EpisodeLength: 2,
				Thresholds: v1alpha1.RewardThresholds{Online: 1, Serving: 3, Variance: 1, Window: 1},
				Actions:    v1alpha1.ActionBounds{MaxReplicaChange: ptr(int32(1))},
			},
		},
		Status: v1alpha1.MultidimPodAutoscalerStatus{Agent: &v1alpha1.AgentStatus{Stage: v1alpha1.StageOnline}},
	}
}

// world is a fake cluster with a fake controller: it applies the
// recommendation the environment writes (scale and resources at once),
// like the real controller at its next step.
type world struct {
	t *testing.T
	c client.Client

	mu         sync.Mutex
	actuatedAt time.Time
	queries    []autoscaler.Query
	obsErrs    int       // Observe fails this many times first
	gapUntil   time.Time // Observe fails for windows ending until then
	act        bool
	room       int           // pods the cluster can place (0: any number); the others stay Unschedulable
	lag        time.Duration // the controller takes a recommendation this much after its next round
	writes     int           // status patches (the environment's recommendations)
}

var labels = map[string]string{"app": "app"}

func pod(name string, cpu, mem string) *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "workload", Image: "x", Resources: corev1.ResourceRequirements{Limits: res, Requests: res.DeepCopy()}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "workload", Resources: &corev1.ResourceRequirements{Limits: res.DeepCopy(), Requests: res.DeepCopy()}}}}}
}

func newWorld(t *testing.T, edit func(*v1alpha1.MultidimPodAutoscaler)) *world {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod("t", "500m", "512Mi").Spec}},
	}
	m := testMPA()
	if edit != nil {
		edit(m)
	}
	w := &world{t: t, act: true}
	w.c = fake.NewClientBuilder().WithScheme(s).
		WithObjects(dep, pod("app-1", "500m", "512Mi"), pod("app-2", "500m", "512Mi"), m).
		WithStatusSubresource(&v1alpha1.MultidimPodAutoscaler{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.mu.Lock()
			w.writes++
			w.mu.Unlock()
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}, SubResourceGet: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, _ ...client.SubResourceGetOption) error {
			if err := c.SubResource(sub).Get(ctx, obj, subObj); err != nil {
				return err
			}
			if sc, ok := subObj.(*autoscalingv1.Scale); ok {
				sc.Status.Selector = "app=app" // the fake formats it as a Go struct
			}
			return nil
		}}).Build()
	return w
}

// run is the fake controller: a recommendation is taken (its time written
// to status.appliedRecommendationTime) and actuated at the next multiple of
// the step, as the real controller's rounds are aligned, plus the lag.
func (w *world) run(ctx context.Context) {
	var done *v1alpha1.RecommendedPodResources
	for ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		var m v1alpha1.MultidimPodAutoscaler
		if w.c.Get(ctx, key, &m) != nil {
			continue
		}
		rec := m.Status.Recommendation
		// A new recommendation (its time has whole seconds only: two steps
		// within a second differ in what they ask).
		w.mu.Lock()
		act, lag := w.act, w.lag
		w.mu.Unlock()
		if rec == nil || equality.Semantic.DeepEqual(rec, done) || time.Now().Before(rec.Time.Truncate(step).Add(step+lag)) {
			continue
		}
		done = rec.DeepCopy()
		m.Status.AppliedRecommendationTime = rec.Time.DeepCopy()
		require.NoError(w.t, w.c.Status().Update(ctx, &m))
		if act {
			// As the controller: running pods keep their resources for a
			// change below the profile's minResizePercent.
			pol, err := autoscaler.PolicyOf(&m)
			require.NoError(w.t, err)
			var pods corev1.PodList
			require.NoError(w.t, w.c.List(ctx, &pods, client.InNamespace("ns")))
			target := scaletarget.ContainerResources(corev1.ResourceRequirements{Limits: rec.ContainerRecommendations[0].Target})
			applied, _ := autoscaler.Resize(pol, scaletarget.MeanResources(pods.Items, "workload"), target, true)
			w.actuate(ctx, *rec.Replicas, autoscaler.ResourceList(applied))
		}
	}
}

func (w *world) actuate(ctx context.Context, replicas int32, target corev1.ResourceList) {
	var dep appsv1.Deployment
	require.NoError(w.t, w.c.Get(ctx, key, &dep))
	dep.Spec.Replicas = &replicas
	require.NoError(w.t, w.c.Update(ctx, &dep))
	var pods corev1.PodList
	require.NoError(w.t, w.c.List(ctx, &pods, client.InNamespace("ns")))
	for i := range pods.Items {
		require.NoError(w.t, w.c.Delete(ctx, &pods.Items[i]))
	}
	w.mu.Lock()
	room := w.room
	w.mu.Unlock()
	for i := range replicas {
		p := pod(fmt.Sprintf("app-%d", i+1), target.Cpu().String(), target.Memory().String())
		if room > 0 && int(i) >= room {
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
				Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/4 nodes are available: 4 Insufficient cpu."}}}
		}
		require.NoError(w.t, w.c.Create(ctx, p))
	}
	w.mu.Lock()
	w.actuatedAt = time.Now()
	w.mu.Unlock()
}

// Observe is the fake Prometheus: every pod uses 0.25 cores and 256 MiB,
// 20 req/s arrive and all are served at 40 ms p99.
func (w *world) Observe(_ context.Context, q autoscaler.Query) (gym.Metrics, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queries = append(w.queries, q)
	if w.obsErrs > 0 {
		w.obsErrs--
		return gym.Metrics{}, errNoData
	}
	if !q.At.After(w.gapUntil) {
		return gym.Metrics{}, errNoData
	}
	n := float64(len(q.Pods))
	return gym.Metrics{ReadyReplicas: len(q.Pods), CPUUsage: 0.25 * n, MemoryUsage: 256 * gym.MiB * n, MemoryPeak: 256 * gym.MiB,
		ArrivalRate: 20, ProcessedRate: 20, LatencyP99: 0.04}, nil
}

var errNoData = errors.New("no data")

func (w *world) env(t *testing.T, opts ...mpaenv.Option) *mpaenv.Env {
	t.Helper()
	opts = append([]mpaenv.Option{mpaenv.WithStep(step), mpaenv.WithPollInterval(5 * time.Millisecond), mpaenv.WithSettle(5 * time.Millisecond)}, opts...)
	e, err := mpaenv.New(t.Context(), w.c, key, w, opts...)
	require.NoError(t, err)
	return e
}

// started runs the fake controller until the test ends and returns a reset
// environment and the test's context.
func (w *world) started(t *testing.T, opts ...mpaenv.Option) (context.Context, *mpaenv.Env) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go w.run(ctx)
	e := w.env(t, opts...)
	_, _, err := e.Reset(ctx, 0)
	require.NoError(t, err)
	return ctx, e
}

func TestStepActuatesThenObserves(t *testing.T) {
	w := newWorld(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go w.run(ctx)
	e := w.env(t)
	assert.Equal(t, gym.ActionSpace(gym.Bounds{MinReplicas: 1, MaxReplicas: 10, MinCPU: 0.128, MaxCPU: 2, MinMemory: 256 * gym.MiB, MaxMemory: 2048 * gym.MiB}), e.ActionSpace())
	assert.Equal(t, gym.ObservationSpace(), e.ObservationSpace())

	obs, info, err := e.Reset(ctx, 7)
	require.NoError(t, err)
	require.NoError(t, e.ObservationSpace().Contains(obs))
	assert.Equal(t, 0, info.Step)
	assert.Equal(t, 2, info.Metrics.Replicas)
	assert.Zero(t, obs[gym.StLoadChange], "the first observation has no previous load")

	// Four replicas asked, one more allowed per step; memory above the
	// bounds is clipped to them.
	obs, reward, term, trunc, info, err := e.Step(ctx, []float64{4, 0.75, 4096 * gym.MiB})
	require.NoError(t, err)
	assert.False(t, term)
	assert.False(t, trunc)
	assert.Equal(t, 1, info.Step)

	var m v1alpha1.MultidimPodAutoscaler
	require.NoError(t, w.c.Get(ctx, key, &m))
	rec := m.Status.Recommendation
	require.NotNil(t, rec)
	assert.Equal(t, int32(3), *rec.Replicas, "bounded by maxReplicaChange as the controller bounds it")
	assert.Equal(t, "aware", rec.Recommender)
	require.Len(t, rec.ContainerRecommendations, 1)
	assert.Equal(t, "workload", rec.ContainerRecommendations[0].ContainerName)
	assert.Equal(t, "750m", rec.ContainerRecommendations[0].Target.Cpu().String())
	assert.Equal(t, "2Gi", rec.ContainerRecommendations[0].Target.Memory().String())

	// The observation is of a whole step after the actuation.
	w.mu.Lock()
	last, actuated := w.queries[len(w.queries)-1], w.actuatedAt
	w.mu.Unlock()
	assert.Len(t, last.Pods, 3)
	assert.Equal(t, "workload", last.Container)
	assert.Equal(t, step, last.Window)
	assert.False(t, last.At.Add(-step).Before(actuated), "window [%v, %v] starts before the actuation at %v", last.At.Add(-step), last.At, actuated)

	// State and reward by hand: 3 pods of 0.75 cores and 2 GiB using 0.25
	// cores and 256 MiB each; SLO met.
	assert.Equal(t, 3, info.Metrics.Replicas)
	assert.InDelta(t, 0.75, info.Metrics.CPULimit, 1e-9)
	assert.InDelta(t, 2048*gym.MiB, info.Metrics.MemoryLimit, 1)
	assert.Equal(t, 1.0, info.SP)
	assert.False(t, info.SLOViolated)
	cpuU, memU := 0.25/0.75, 256.0/2048
	assert.InDelta(t, 0.7*1*2+0.3*(cpuU+memU), reward, 1e-9)
	assert.InDelta(t, cpuU, obs[gym.StCPUUtil], 1e-9)
	assert.InDelta(t, 0.3, obs[gym.StReplicas], 1e-9)
	assert.InDelta(t, 0.375, obs[gym.StCPULimit], 1e-9)

	// The episode (length 2, from the profile) is truncated at step 2.
	_, _, _, trunc, info, err = e.Step(ctx, []float64{3, 0.75, 2048 * gym.MiB})
	require.NoError(t, err)
	assert.True(t, trunc)
	assert.Equal(t, 2, info.Step)
}

// TestStepSmallChangeKeepsResources: a change below the profile's
// minResizePercent (default 10 %) leaves the pods' resources as they are
// (the controller does not resize for it), and the step waits for that
// instead of timing out on resources that never come.
func TestStepSmallChangeKeepsResources(t *testing.T) {
	w := newWorld(t, nil)
	ctx, e := w.started(t, mpaenv.WithActuationTimeout(5*time.Second))
	_, _, _, _, info, err := e.Step(ctx, []float64{2, 0.52, 520 * gym.MiB}) // +4 %, +1.6 %
	require.NoError(t, err)
	assert.InDelta(t, 0.5, info.Metrics.CPULimit, 1e-9, "kept")
	assert.InDelta(t, 512*gym.MiB, info.Metrics.MemoryLimit, 1, "kept")
	_, _, _, _, info, err = e.Step(ctx, []float64{2, 0.6, 512 * gym.MiB}) // +20 %
	require.NoError(t, err)
	assert.InDelta(t, 0.6, info.Metrics.CPULimit, 1e-9, "resized")
}

// TestStepWithUnschedulablePods: pods the cluster has no room for count as
// actuated (the step measures the pods that run instead of timing out and
// asking again for what cannot be placed); pods merely starting do not.
func TestStepWithUnschedulablePods(t *testing.T) {
	w := newWorld(t, nil)
	w.room = 2
	ctx, e := w.started(t, mpaenv.WithActuationTimeout(2*step))
	_, _, _, _, info, err := e.Step(ctx, []float64{3, 0.5, 512 * gym.MiB})
	require.NoError(t, err, "the third pod is Unschedulable: actuated as far as the cluster allows")
	assert.Equal(t, 3, info.Metrics.Replicas)

	// A pod that is Pending but not (yet) found unschedulable is waited for.
	var p corev1.Pod
	require.NoError(t, w.c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "app-3"}, &p))
	p.Status.Conditions = nil
	require.NoError(t, w.c.Status().Update(ctx, &p))
	w.mu.Lock()
	w.act = false
	w.mu.Unlock()
	_, _, _, _, _, err = e.Step(ctx, []float64{3, 0.5, 512 * gym.MiB})
	assert.ErrorContains(t, err, "2 of 3 pods ready, 0 unschedulable (3 pods)")
}

// TestStepWaitsForSlowController: a controller behind its rounds takes the
// recommendation later than the actuation timeout; the environment waits
// for it (up to the pickup timeout) instead of failing the step and
// writing again.
func TestStepWaitsForSlowController(t *testing.T) {
	w := newWorld(t, nil)
	w.lag = 3 * step
	ctx, e := w.started(t, mpaenv.WithActuationTimeout(step))
	_, _, _, _, info, err := e.Step(ctx, []float64{3, 0.75, 512 * gym.MiB})
	require.NoError(t, err)
	assert.Equal(t, 3, info.Metrics.Replicas)
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Equal(t, 1, w.writes, "one recommendation written")
}

func TestObservationRetriesMissingMeasurements(t *testing.T) {
	w := newWorld(t, nil)
	w.obsErrs = 3
	e := w.env(t)
	_, _, err := e.Reset(t.Context(), 0)
	require.NoError(t, err)

	// A window that stays without data (a missed scrape) gives way to
	// the next one.
	w.mu.Lock()
	w.gapUntil = time.Now().Add(step)
	gap, asked := w.gapUntil, len(w.queries)
	w.mu.Unlock()
	_, _, err = e.Reset(t.Context(), 0)
	require.NoError(t, err)
	w.mu.Lock()
	queries := w.queries[asked:]
	w.mu.Unlock()
	require.Greater(t, len(queries), 1)
	assert.False(t, queries[0].At.After(gap), "the first window observed is in the gap")
	last := queries[len(queries)-1]
	assert.True(t, last.At.After(gap), "observed the window ending %v, in the gap until %v", last.At, gap)
	assert.Equal(t, queries[0].At.Add(last.At.Sub(queries[0].At).Truncate(step)), last.At, "windows move by whole steps")

	// Without data for the whole timeout, Reset fails naming the window.
	w.obsErrs = 1 << 30
	_, _, err = e.Reset(t.Context(), 0)
	require.ErrorIs(t, err, errNoData)
	assert.ErrorContains(t, err, "MPA ns/app: measurements of the step ending")
	assert.ErrorContains(t, err, "no window measured in the 600ms after it")
}

func TestErrors(t *testing.T) {
	t.Run("built-in recommender", func(t *testing.T) {
		w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) { m.Spec.Recommenders = nil })
		_, err := mpaenv.New(t.Context(), w.c, key, w)
		assert.ErrorContains(t, err, `spec.recommenders selects the built-in "default" recommender`)
	})
	t.Run("update mode off", func(t *testing.T) {
		w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
			off := v1alpha1.UpdateModeOff
			m.Spec.UpdatePolicy.UpdateMode = &off
		})
		_, err := mpaenv.New(t.Context(), w.c, key, w)
		assert.ErrorContains(t, err, "spec.updatePolicy.updateMode is Off")
	})
	t.Run("missing MPA", func(t *testing.T) {
		w := newWorld(t, nil)
		_, err := mpaenv.New(t.Context(), w.c, types.NamespacedName{Namespace: "ns", Name: "nope"}, w)
		assert.ErrorContains(t, err, "MPA ns/nope")
	})
	t.Run("bad options", func(t *testing.T) {
		w := newWorld(t, nil)
		_, err := mpaenv.New(t.Context(), w.c, key, w, mpaenv.WithStep(0))
		assert.ErrorContains(t, err, "step 0s must be positive")
		_, err = mpaenv.New(t.Context(), nil, key, w)
		assert.ErrorContains(t, err, "client and an observer")
	})
	t.Run("agent still bootstrapping", func(t *testing.T) {
		w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) { m.Status.Agent.Stage = v1alpha1.StageOffline })
		e := w.env(t, mpaenv.WithActuationTimeout(3*step))
		_, _, err := e.Reset(t.Context(), 0)
		assert.ErrorContains(t, err, "agent stage is Offline; the controller applies an external recommendation only in Online or Serving")
	})
	t.Run("step before reset and bad actions", func(t *testing.T) {
		w := newWorld(t, nil)
		e := w.env(t)
		_, _, _, _, _, err := e.Step(t.Context(), []float64{1, 1, 1})
		assert.ErrorContains(t, err, "Step before Reset")
		_, _, err = e.Reset(t.Context(), 0)
		require.NoError(t, err)
		_, _, _, _, _, err = e.Step(t.Context(), []float64{1, 1})
		assert.ErrorContains(t, err, "action has 2 values, want 3")
		_, _, _, _, _, err = e.Step(t.Context(), []float64{1, 1, nanValue()})
		assert.ErrorContains(t, err, "action memory_bytes is NaN")
	})
	t.Run("controller does not take the recommendation", func(t *testing.T) {
		w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionMetricsAvailable, Status: metav1.ConditionFalse, Reason: "MetricsUnavailable", Message: "holding"}}
		})
		e := w.env(t, mpaenv.WithPickupTimeout(2*step))
		_, _, err := e.Reset(t.Context(), 0)
		require.NoError(t, err)
		_, _, _, _, _, err = e.Step(t.Context(), []float64{3, 0.5, 512 * gym.MiB})
		assert.ErrorContains(t, err, "the controller did not take the recommendation 3 × (0.5cores, 512Mi) written at")
		assert.ErrorContains(t, err, "within 400ms (status.appliedRecommendationTime is unset)")
		assert.ErrorContains(t, err, "the target's replicas are 2")
		assert.ErrorContains(t, err, "MetricsAvailable=False (MetricsUnavailable: holding)")
	})
	t.Run("controller takes but does not actuate", func(t *testing.T) {
		w := newWorld(t, nil)
		w.act = false
		ctx, e := w.started(t, mpaenv.WithActuationTimeout(2*step))
		_, _, _, _, _, err := e.Step(ctx, []float64{3, 0.5, 512 * gym.MiB})
		assert.ErrorContains(t, err, "the controller took 3 × (0.5cores, 512Mi) after")
		assert.ErrorContains(t, err, "but did not actuate it within 400ms: the target's replicas are 2 (its status.desiredReplicas 0, lastScaleTime unset)")
	})
	t.Run("cancelled", func(t *testing.T) {
		w := newWorld(t, nil)
		// No controller runs and the actuation timeout is an hour, so only
		// the context's deadline can end the Step, however busy the machine.
		e := w.env(t, mpaenv.WithActuationTimeout(time.Hour))
		_, _, err := e.Reset(t.Context(), 0)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), step/2)
		defer cancel()
		_, _, _, _, _, err = e.Step(ctx, []float64{3, 0.5, 512 * gym.MiB})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func nanValue() float64 { var z float64; return z / z }
