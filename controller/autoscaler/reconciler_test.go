package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/client-go/tools/record"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// world is a fake cluster with one Deployment of two pods and its MPA.
type world struct {
	c     client.Client
	r     *Reconciler
	store *trajectory.Memory
	now   time.Time
	met   gym.Metrics
	err   error
	calls int
	pods  []string // the pods every query must name (default app-1, app-2)
	young []string // the last query's young pods
	// failScale and failStatus make scale updates and MPA status writes
	// fail.
	failScale, failStatus bool
	// resizeNotFound makes the resize of the pods it names fail with
	// NotFound: err(name) is the API's error.
	resizeNotFound map[string]func(name string) error
}

func newWorld(t *testing.T, edit func(*v1alpha1.MultidimPodAutoscaler), opts ...Option) (w *world) {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	labels := map[string]string{"app": "app"}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	ctr := corev1.Container{Name: "workload", Image: "x", Resources: corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}}}},
		Status: appsv1.DeploymentStatus{Replicas: 2},
	}
	objs := []client.Object{dep}
	for _, n := range []string{"app-1", "app-2"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "ns", Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{*ctr.DeepCopy()}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	m := testMPA()
	if edit != nil {
		edit(m)
	}
	objs = append(objs, m)
	w = &world{store: trajectory.NewMemory(), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), pods: []string{"app-1", "app-2"}}
	w.c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.MultidimPodAutoscaler{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceGet: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, _ ...client.SubResourceGetOption) error {
			if err := c.SubResource(sub).Get(ctx, obj, subObj); err != nil {
				return err
			}
			// The fake formats the selector as a Go struct; the API server
			// sends the label selector string.
			if sc, ok := subObj.(*autoscalingv1.Scale); ok {
				sc.Status.Selector = "app=app"
			}
			return nil
		}, SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if sub == "scale" && w.failScale {
				return apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, obj.GetName(), errors.New("the object has been modified"))
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}, SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if sub == "status" && w.failStatus {
				return apierrors.NewServiceUnavailable("etcd is down")
			}
			if f := w.resizeNotFound[obj.GetName()]; sub == "resize" && f != nil {
				return f(obj.GetName())
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	// Two pods at 0.5 cores each using 1 core each: 200 % of the limit.
	w.met = gym.Metrics{ReadyReplicas: 2, CPUUsage: 2, MemoryUsage: 400 * gym.MiB, MemoryPeak: 200 * gym.MiB, ArrivalRate: 50, ProcessedRate: 50, LatencyP99: 0.02}
	obs := ObserverFunc(func(ctx context.Context, q Query) (gym.Metrics, error) {
		w.calls++
		assert.Equal(t, "ns", q.Namespace)
		assert.Equal(t, "workload", q.Container)
		assert.ElementsMatch(t, w.pods, q.Pods)
		w.young = q.Young
		return w.met, w.err
	})
	var err error
	w.r, err = New(w.c, obs, w.store, append([]Option{WithClock(func() time.Time { return w.now })}, opts...)...)
	require.NoError(t, err)
	return w
}

// step reconciles once, a step after the previous one, and lets the
// updater apply the decision. It returns the MPA as the step wrote it:
// what the updater applied shows at the next step.
func (w *world) step(t *testing.T) *v1alpha1.MultidimPodAutoscaler {
	t.Helper()
	w.now = w.now.Add(15 * time.Second)
	_, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}})
	require.NoError(t, err)
	m := w.mpa(t)
	w.r.upd.drain(context.Background())
	return m
}

// drain applies every queued plan now, in the caller (no manager runs the
// updater's workers in these tests).
func (u *updater) drain(ctx context.Context) {
	for u.q.Len() > 0 {
		u.next(ctx)
	}
}

func (w *world) mpa(t *testing.T) *v1alpha1.MultidimPodAutoscaler {
	var m v1alpha1.MultidimPodAutoscaler
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app"}, &m))
	return &m
}

func (w *world) replicas(t *testing.T) int32 {
	var d appsv1.Deployment
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app"}, &d))
	return *d.Spec.Replicas
}

func (w *world) podCPU(t *testing.T, name string) string {
	var p corev1.Pod
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &p))
	return p.Spec.Containers[0].Resources.Limits.Cpu().String()
}

func condition(m *v1alpha1.MultidimPodAutoscaler, typ string) metav1.Condition {
	c := meta.FindStatusCondition(m.Status.Conditions, typ)
	if c == nil {
		return metav1.Condition{}
	}
	return *c
}

func TestReconcileDefaultRecommender(t *testing.T) {
	w := newWorld(t, nil)
	m := w.step(t)
	require.NotNil(t, m.Status.Recommendation)
	assert.Equal(t, "hpa+vpa", m.Status.Recommendation.Recommender)
	// 200 % of a 60 % target: 7 pods wanted, the default scale-up policy
	// allows max(4 pods, 100 %) = +4 per 15 s.
	assert.Equal(t, int32(6), *m.Status.Recommendation.Replicas)
	assert.Equal(t, int32(6), w.replicas(t), "scaled through the scale subresource")
	assert.Equal(t, int32(6), m.Status.DesiredReplicas)
	assert.Nil(t, m.Status.LastScaleTime, "the updater applies the decision after the status write")
	assert.Equal(t, metav1.ConditionTrue, condition(m, v1alpha1.ConditionMetricsAvailable).Status)
	assert.Equal(t, metav1.ConditionTrue, condition(m, v1alpha1.ConditionAbleToScale).Status)
	assert.Equal(t, metav1.ConditionTrue, condition(m, v1alpha1.ConditionRecommendationProvided).Status)
	assert.Equal(t, int64(1), m.Status.ObservedGeneration)
	require.NotNil(t, m.Status.Agent)
	assert.Equal(t, v1alpha1.StageOffline, m.Status.Agent.Stage, "bootstrapping starts offline")

	// A second reconcile within the same step (e.g. a spec watch event) does
	// not run another step.
	calls := w.calls
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}}
	_, err := w.r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, calls, w.calls)
	assert.Nil(t, w.mpa(t).Status.LastScaleTime, "a skipped step writes nothing")
	scaled := w.now

	// A step that ran late in its round (a long queue) does not cost the
	// next round its step.
	round := w.now.Truncate(15 * time.Second)
	w.now = round.Add(29 * time.Second)
	_, err = w.r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, calls+1, w.calls)
	require.NotNil(t, w.mpa(t).Status.LastScaleTime, "the next step reports what the updater applied")
	assert.True(t, scaled.Equal(w.mpa(t).Status.LastScaleTime.Time))
	w.now = round.Add(30 * time.Second)
	res, err := w.r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, calls+2, w.calls, "the next round steps, 1 s after the late one")
	assert.Equal(t, 15*time.Second, res.RequeueAfter, "aligned on the next round")
}

func TestReconcileHoldsOnMissingMetrics(t *testing.T) {
	w := newWorld(t, nil)
	w.err = errors.New("no samples for container_cpu_usage_seconds_total")
	m := w.step(t)
	c := condition(m, v1alpha1.ConditionMetricsAvailable)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Contains(t, c.Message, "holding the last decision: no samples")
	assert.Nil(t, m.Status.Recommendation)
	assert.Equal(t, int32(2), w.replicas(t), "no decision without metrics")
	apps, err := w.store.Apps(context.Background())
	require.NoError(t, err)
	assert.Empty(t, apps, "no trajectory step without metrics")
}

func TestReconcileExternalRecommender(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
		m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: "aware"}}
		m.Spec.Agent.Bootstrap = ptr(false)
		m.Spec.Agent.Actions.MaxReplicaChange = ptr(int32(1))
	})
	// No recommendation from the agent yet: hold.
	m := w.step(t)
	assert.Equal(t, v1alpha1.StageOnline, m.Status.Agent.Stage)
	assert.Equal(t, metav1.ConditionFalse, condition(m, v1alpha1.ConditionRecommendationProvided).Status)
	assert.Equal(t, int32(2), w.replicas(t))

	// The agent writes a recommendation; the controller applies it, one
	// replica per step (the profile's action bound), resources in place.
	ts := metav1.NewTime(w.now)
	m.Status.Recommendation = &v1alpha1.RecommendedPodResources{Replicas: ptr(int32(5)), Recommender: "aware", Time: &ts,
		ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "workload",
			Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
	require.NoError(t, w.c.Status().Update(context.Background(), m))
	m = w.step(t)
	assert.Equal(t, int32(3), w.replicas(t))
	assert.Equal(t, metav1.ConditionTrue, condition(m, v1alpha1.ConditionScalingLimited).Status)
	assert.Equal(t, "1", w.podCPU(t, "app-1"))
	assert.Equal(t, "1", w.podCPU(t, "app-2"))
	assert.Equal(t, "aware", m.Status.Recommendation.Recommender, "the agent's recommendation is not overwritten")
	m = w.step(t)
	assert.Equal(t, metav1.ConditionTrue, condition(m, v1alpha1.ConditionResizedInPlace).Status, "reported at the next step")
	assert.NotNil(t, m.Status.LastScaleTime)

	// Four steps later the recommendation is stale (max age 3 steps): hold.
	for range 2 {
		w.step(t)
	}
	before := w.replicas(t)
	m = w.step(t)
	assert.Equal(t, metav1.ConditionFalse, condition(m, v1alpha1.ConditionRecommendationProvided).Status)
	assert.Equal(t, before, w.replicas(t))

	// A change below the profile's minResizePercent (default 10 %) keeps
	// the pods' resources, as for the built-in recommender.
	small := func(cpu string) {
		t.Helper()
		ts := metav1.NewTime(w.now)
		m.Status.Recommendation = &v1alpha1.RecommendedPodResources{Replicas: ptr(before), Recommender: "aware", Time: &ts,
			ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "workload",
				Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
		require.NoError(t, w.c.Status().Update(context.Background(), m))
		m = w.step(t)
		w.step(t) // the updater's report
	}
	small("1050m")
	assert.Equal(t, "1", w.podCPU(t, "app-1"), "+5 %: kept")
	m.Spec.Agent.Actions.MinResizePercent = ptr(int32(0))
	require.NoError(t, w.c.Update(context.Background(), m))
	small("1050m")
	assert.Equal(t, "1050m", w.podCPU(t, "app-1"), "minResizePercent 0: every change applied")
}

// TestReconcileResizesAPodOffTarget: a pod unlike the others (created from
// the template while the admission webhook was off) is resized to the
// recommendation even when the pods' mean is within the resize threshold;
// pods within it are left alone.
func TestReconcileResizesAPodOffTarget(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
		m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: "aware"}}
		m.Spec.Agent.Bootstrap = ptr(false)
	})
	m := w.step(t)
	require.Equal(t, v1alpha1.StageOnline, m.Status.Agent.Stage)
	recommend := func(cpu string) {
		t.Helper()
		ts := metav1.NewTime(w.now)
		m.Status.Recommendation = &v1alpha1.RecommendedPodResources{Replicas: ptr(int32(2)), Recommender: "aware", Time: &ts,
			ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "workload",
				Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("512Mi")}}}}
		require.NoError(t, w.c.Status().Update(context.Background(), m))
	}
	recommend("1")
	m = w.step(t)
	require.Equal(t, "1", w.podCPU(t, "app-1"))
	require.Equal(t, "1", w.podCPU(t, "app-2"))

	// Four more pods: three at the target, one at 0.8 cores. Their mean
	// (0.96 cores) is within 10 % of 1.05 cores; the odd pod is not.
	var tmpl corev1.Pod
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app-1"}, &tmpl))
	for i, cpu := range map[int]string{3: "1", 4: "1", 5: "1", 6: "800m"} {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: "ns", Labels: tmpl.Labels},
			Spec: *tmpl.Spec.DeepCopy(), Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse(cpu)
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		require.NoError(t, w.c.Create(context.Background(), &p))
		w.pods = append(w.pods, p.Name)
	}
	recommend("1050m")
	m = w.step(t)
	assert.Equal(t, "1050m", w.podCPU(t, "app-6"), "the pod off target is resized")
	for _, n := range []string{"app-1", "app-2", "app-3", "app-4", "app-5"} {
		assert.Equal(t, "1", w.podCPU(t, n), "%s is within 10 %% of the target: left alone", n)
	}
}

// TestReconcileDropsAStaleQueuedDecision: a decision still queued for the
// updater is dropped when a later step finds nothing to change, instead of
// moving the target away from where that step wants it.
func TestReconcileDropsAStaleQueuedDecision(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
		m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: "aware"}}
		m.Spec.Agent.Bootstrap = ptr(false)
	})
	m := w.step(t)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}}
	recommend := func(replicas int32) {
		t.Helper()
		ts := metav1.NewTime(w.now)
		m.Status.Recommendation = &v1alpha1.RecommendedPodResources{Replicas: ptr(replicas), Recommender: "aware", Time: &ts,
			ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "workload",
				Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")}}}}
		require.NoError(t, w.c.Status().Update(context.Background(), m))
		w.now = w.now.Add(15 * time.Second)
		_, err := w.r.Reconcile(context.Background(), req)
		require.NoError(t, err)
		m = w.mpa(t)
	}
	recommend(3) // queued, not yet applied (the updater is busy)
	require.Equal(t, int32(3), m.Status.DesiredReplicas)
	recommend(2) // the target is already at 2: nothing to change
	w.r.upd.drain(context.Background())
	assert.Equal(t, int32(2), w.replicas(t), "the queued decision for 3 replicas was dropped")
}

// TestReconcileRecommendationAgeInTheMPAsSteps: a controller behind its
// rounds (here it reaches the MPA once a minute on a 15 s step) acts on what
// the recommender wrote since its last visit, for maxRecAge of the MPA's
// own steps, and says which recommendation it took; a restarted controller,
// which does not know the MPA's steps before it, judges by age alone.
func TestReconcileRecommendationAgeInTheMPAsSteps(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
		m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: "aware"}}
		m.Spec.Agent.Bootstrap = ptr(false)
	})
	visit := func() *v1alpha1.MultidimPodAutoscaler {
		t.Helper()
		w.now = w.now.Add(time.Minute)
		_, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}})
		require.NoError(t, err)
		w.r.upd.drain(context.Background())
		return w.mpa(t)
	}
	recommend := func(m *v1alpha1.MultidimPodAutoscaler) metav1.Time {
		t.Helper()
		ts := metav1.NewTime(w.now.Add(time.Second))
		m.Status.Recommendation = &v1alpha1.RecommendedPodResources{Replicas: ptr(int32(3)), Recommender: "aware", Time: &ts,
			ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "workload",
				Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
		require.NoError(t, w.c.Status().Update(context.Background(), m))
		return ts
	}
	m := visit()
	require.Equal(t, "NoFreshRecommendation", condition(m, v1alpha1.ConditionRecommendationProvided).Reason)
	assert.Nil(t, m.Status.AppliedRecommendationTime)

	ts := recommend(m)
	for i := range 3 {
		m = visit() // 59, 119 and 179 s old: older than 3 steps, but the MPA's 1st, 2nd, 3rd step since
		assert.Equal(t, "RecommendationApplied", condition(m, v1alpha1.ConditionRecommendationProvided).Reason, "visit %d", i+1)
		require.NotNil(t, m.Status.AppliedRecommendationTime)
		assert.True(t, ts.Equal(m.Status.AppliedRecommendationTime), "the recommendation taken is reported")
	}
	assert.Equal(t, int32(3), w.replicas(t))
	rec := record.NewFakeRecorder(64)
	w.r.cfg.recorder = rec
	m = visit()
	assert.Equal(t, "NoFreshRecommendation", condition(m, v1alpha1.ConditionRecommendationProvided).Reason, "3 of the MPA's steps since: stale")
	assert.Contains(t, events(rec), "Warning NoFreshRecommendation recommender \"aware\" has not written a recommendation in the last 3 steps; holding",
		"a held step is an Event for the operator")
	assert.Equal(t, 1.0, testutil.ToFloat64(w.r.cfg.metrics.stale.WithLabelValues("ns", "app", HoldAwaitingFirst)), "the first visit, before any recommendation, held awaiting the first")
	assert.Equal(t, 1.0, testutil.ToFloat64(w.r.cfg.metrics.stale.WithLabelValues("ns", "app", HoldApplied)), "this one held on the applied recommendation, in force while the recommender observes it")
	assert.Zero(t, testutil.ToFloat64(w.r.cfg.metrics.stale.WithLabelValues("ns", "app", HoldStale)), "no action lost")

	// A new controller knows none of the MPA's steps before its own.
	recommend(m)
	obs := w.r.obs
	var err error
	w.r, err = New(w.c, obs, w.store, WithClock(func() time.Time { return w.now }))
	require.NoError(t, err)
	m = visit()
	assert.Equal(t, "NoFreshRecommendation", condition(m, v1alpha1.ConditionRecommendationProvided).Reason, "59 s old, written before this controller's first step")
	assert.Equal(t, 1.0, testutil.ToFloat64(w.r.cfg.metrics.stale.WithLabelValues("ns", "app", HoldStale)),
		"a recommendation that grew too old before any controller applied it is a stale action, counted per MPA: the studies on the testbed read their stale actions from it")
}

func TestReconcileWithheldRecommendation(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
		m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: "aware"}}
		m.Spec.Agent.Bootstrap = ptr(false)
		m.Spec.Agent.Actions.MaxReplicaChange = ptr(int32(1))
	})
	m := w.step(t)
	require.Equal(t, v1alpha1.StageOnline, m.Status.Agent.Stage)
	require.Equal(t, int32(2), w.replicas(t), "no recommendation yet: hold")

	// The agent's action was NaN: it withholds, and HPA+VPA acts for the
	// step as it would without an agent (6 replicas, not the agent's
	// one-per-step bound).
	ts := metav1.NewTime(w.now)
	m.Status.Recommendation = &v1alpha1.RecommendedPodResources{Recommender: "aware", Time: &ts,
		Withheld: &v1alpha1.WithheldRecommendation{Reason: "NaNAction", Message: "the actor's replicas output is NaN"}}
	require.NoError(t, w.c.Status().Update(context.Background(), m))
	m = w.step(t)
	c := condition(m, v1alpha1.ConditionRecommendationProvided)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, "NaNAction", c.Reason)
	assert.Contains(t, c.Message, "the actor's replicas output is NaN")
	assert.Contains(t, c.Message, "acting on hpa+vpa")
	assert.Equal(t, int32(6), w.replicas(t), "the fallback acted")
	require.NotNil(t, m.Status.Recommendation.Withheld, "the recommender's marker is left for it to replace")
	assert.Equal(t, "aware", m.Status.Recommendation.Recommender)

	// A stale marker no longer hands steps to the fallback: hold.
	for range 3 {
		w.step(t)
	}
	before := w.replicas(t)
	m = w.step(t)
	assert.Equal(t, "NoFreshRecommendation", condition(m, v1alpha1.ConditionRecommendationProvided).Reason)
	assert.Equal(t, before, w.replicas(t))
}

func TestReconcileTrajectoriesAndLifecycle(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
		m.Spec.Agent.EpisodeLength = 3
		m.Spec.Agent.Thresholds = v1alpha1.RewardThresholds{Online: 0.5, Serving: 6, Variance: 1, Window: 1}
		mode := v1alpha1.UpdateModeOff
		m.Spec.UpdatePolicy.UpdateMode = &mode
	})
	// The first step has no previous action to credit; the next three
	// complete episode 0.
	m := w.step(t)
	assert.Equal(t, v1alpha1.StageOffline, m.Status.Agent.Stage)
	c := condition(m, v1alpha1.ConditionAgentServing)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, ReasonBootstrapping, c.Reason)
	for range 3 {
		m = w.step(t)
	}
	assert.Equal(t, int32(2), w.replicas(t), "update mode Off changes nothing")
	ag := m.Status.Agent
	assert.Equal(t, int64(1), ag.Episode)
	assert.Equal(t, v1alpha1.StageOnline, ag.Stage, "mean reward above thresholds.online over the window")
	c = condition(m, v1alpha1.ConditionAgentServing)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, ReasonRewardReachedOnline, c.Reason)
	assert.Contains(t, c.Message, "over the last 1 episodes reached the online threshold 0.5")
	transitions := w.r.cfg.metrics.transitions
	assert.InDelta(t, 1, testutil.ToFloat64(transitions.WithLabelValues(string(v1alpha1.StageInitialized), string(v1alpha1.StageOffline))), 0)
	assert.InDelta(t, 1, testutil.ToFloat64(transitions.WithLabelValues(string(v1alpha1.StageOffline), string(v1alpha1.StageOnline))), 0)
	require.NotNil(t, ag.RecentReward)
	eps, err := w.store.RecentEpisodes(context.Background(), "ns/app", 5)
	require.NoError(t, err)
	require.Len(t, eps, 1)
	assert.Equal(t, 3, eps[0].Steps)
	assert.InDelta(t, *ag.RecentReward, eps[0].Reward, 1e-12)
	// Latency 20 ms under a 50 ms SLO: SP = 1; CPU fully used, memory
	// 400 MiB of 1 GiB: r = 0.5·2 + 0.5·(1 + 0.390625).
	tr, err := w.store.Top(context.Background(), "ns/app", 1)
	require.NoError(t, err)
	require.Len(t, tr, 1)
	assert.InDelta(t, 1+0.5*(1+400.0/1024), tr[0].Steps[0].Reward, 1e-12)
	assert.Len(t, tr[0].Steps[0].State, gym.StateDim)
	assert.Equal(t, []float64{2, 0.5, 512 * gym.MiB}, tr[0].Steps[0].Action)
}

func TestReconcileInvalidSpec(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) { m.Spec.Constraints.MinReplicas = ptr(int32(50)) })
	m := w.step(t)
	c := condition(m, v1alpha1.ConditionAbleToScale)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, "InvalidSpec", c.Reason)
	assert.Contains(t, c.Message, "maxReplicas 20 is below minReplicas 50")
	assert.Equal(t, 0, w.calls)
}

func TestReconcileForgetsDeletedMPA(t *testing.T) {
	w := newWorld(t, nil)
	w.step(t)
	w.step(t)
	require.Equal(t, 1, testutil.CollectAndCount(w.r.cfg.metrics.reward))
	require.Equal(t, 4, testutil.CollectAndCount(w.r.cfg.metrics.stage))
	require.NoError(t, w.c.Delete(context.Background(), w.mpa(t)))
	_, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}})
	require.NoError(t, err)
	assert.Zero(t, testutil.CollectAndCount(w.r.cfg.metrics.reward))
	assert.Zero(t, testutil.CollectAndCount(w.r.cfg.metrics.stage))
	assert.Empty(t, w.r.state)
}

func TestUpdaterAppliesTheLatestDecision(t *testing.T) {
	w := newWorld(t, nil)
	m := w.mpa(t)
	pol, err := PolicyOf(m)
	require.NoError(t, err)
	st := w.r.stateFor(m)
	// Two decisions before a worker is free: the first is never applied.
	for _, n := range []int32{3, 4} {
		w.r.upd.submit(&plan{mpa: m.DeepCopy(), st: st, pol: pol, container: "workload", desired: n, decided: w.now})
	}
	assert.Equal(t, 1, w.r.upd.q.Len())
	w.r.upd.drain(context.Background())
	assert.Equal(t, int32(4), w.replicas(t))
	assert.InDelta(t, 1, testutil.ToFloat64(w.r.cfg.metrics.decisions.WithLabelValues("replicas")), 0)
	assert.Equal(t, "500m", w.podCPU(t, "app-1"), "no vertical change asked")
}

func TestUpdaterReportsAtTheNextStep(t *testing.T) {
	w := newWorld(t, nil)
	w.failScale = true
	w.step(t)
	m := w.step(t)
	c := condition(m, v1alpha1.ConditionAbleToScale)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, "FailedUpdateScale", c.Reason)
	assert.Contains(t, c.Message, "scale ns/app to 6")
	assert.Nil(t, m.Status.LastScaleTime)
	assert.Equal(t, int32(2), w.replicas(t))

	// The scale succeeds; the status write after it fails: what the
	// updater applied is reported by the next write that succeeds.
	w.failScale = false
	w.step(t)
	require.Equal(t, int32(6), w.replicas(t))
	scaled := w.now
	w.failStatus = true
	w.now = w.now.Add(15 * time.Second)
	_, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}})
	require.Error(t, err)
	w.failStatus = false
	m = w.step(t)
	require.NotNil(t, m.Status.LastScaleTime)
	assert.True(t, scaled.Equal(m.Status.LastScaleTime.Time), "scaled at %v, reported %v", scaled, m.Status.LastScaleTime)
	assert.Equal(t, metav1.ConditionTrue, condition(m, v1alpha1.ConditionAbleToScale).Status)
}

func TestUpdaterStopsWithItsContext(t *testing.T) {
	w := newWorld(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.r.upd.Start(ctx) }()
	w.now = w.now.Add(15 * time.Second)
	_, err := w.r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return w.replicas(t) == 6 }, 5*time.Second, 10*time.Millisecond, "a running updater applies decisions")
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the updater did not stop")
	}
}

func TestReconcileNamesYoungPods(t *testing.T) {
	w := newWorld(t, nil)
	w.step(t)
	assert.Empty(t, w.young, "pods older than a step")
	// The next round's step runs late, 14 s into its round; app-2 started
	// 10 s before the round, after the observed window began: 24 s old,
	// but the round's snapshot may not have it.
	round := w.now.Truncate(15 * time.Second).Add(15 * time.Second)
	var p corev1.Pod
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app-2"}, &p))
	p.CreationTimestamp = metav1.NewTime(round.Add(-10 * time.Second))
	require.NoError(t, w.c.Update(context.Background(), &p))
	w.now = round.Add(14 * time.Second)
	_, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"app-2"}, w.young)
}

func TestReconcileResumesEpisodesFromTheStore(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
		mode := v1alpha1.UpdateModeOff
		m.Spec.UpdatePolicy.UpdateMode = &mode
	})
	for range 3 {
		w.step(t) // the first has no previous action; then T = 0, 1
	}
	uid := w.mpa(t).UID
	episode := func() []trajectory.Trajectory {
		tr, err := w.store.Range(context.Background(), "ns/app", time.Time{}, w.now.Add(time.Second))
		require.NoError(t, err)
		return tr
	}

	// A restarted controller knows nothing of the episode; the store
	// does. Its first step has no previous action; the next continues
	// episode 0 at T = 2.
	w.r.mu.Lock()
	w.r.state, w.r.names = map[types.UID]*mpaState{}, map[types.UID]types.NamespacedName{}
	w.r.mu.Unlock()
	w.step(t)
	w.step(t)
	tr := episode()
	require.Len(t, tr, 1)
	assert.Equal(t, []int{0, 1, 2}, stepIndices(tr[0]), "the episode continues where the store left it")
	assert.Equal(t, int64(0), w.mpa(t).Status.Agent.Episode)

	// The store lost steps the controller counted (a crash while they
	// were buffered): the episode is abandoned and the next one starts.
	w.r.mu.Lock()
	w.r.state[uid].t = 5
	w.r.mu.Unlock()
	m := w.step(t)
	tr = episode()
	require.Len(t, tr, 2)
	assert.Len(t, tr[0].Steps, 3, "episode 0 keeps what was stored")
	assert.Equal(t, int64(1), tr[1].Episode.Episode)
	assert.Equal(t, []int{0}, stepIndices(tr[1]))
	assert.Equal(t, int64(0), m.Status.Agent.Episode, "status moves at episode ends only")
	w.step(t)
	assert.Equal(t, []int{0, 1}, stepIndices(episode()[1]), "and the next steps record again")
}

func stepIndices(tr trajectory.Trajectory) []int {
	out := make([]int, len(tr.Steps))
	for i, s := range tr.Steps {
		out[i] = s.T
	}
	return out
}

func TestReconcileWritesStatusOnlyWhenItChanged(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
		mode := v1alpha1.UpdateModeOff
		m.Spec.UpdatePolicy.UpdateMode = &mode
	})
	w.met.CPUUsage = 0.6 // 60 % of the limits: HPA keeps 2 replicas
	writes := w.r.cfg.metrics.statusWrites
	for range 4 {
		w.step(t)
	}
	written := testutil.ToFloat64(writes.WithLabelValues("written"))
	rv := w.mpa(t).ResourceVersion
	for range 5 {
		w.step(t)
	}
	assert.Equal(t, rv, w.mpa(t).ResourceVersion, "nothing changed: no write")
	assert.Equal(t, written, testutil.ToFloat64(writes.WithLabelValues("written")))
	assert.InDelta(t, 5, testutil.ToFloat64(writes.WithLabelValues("unchanged")), 4, "at least the last five steps")

	// A change of the recommendation is written, with its new time.
	w.met.CPUUsage = 2.4
	m := w.step(t)
	assert.NotEqual(t, rv, m.ResourceVersion)
	assert.True(t, m.Status.Recommendation.Time.Time.Equal(w.now), "the recommendation's time is when it changed")

	// Rounds are measured from their start until their last step.
	assert.Equal(t, uint64(9), histCount(t, w.r.cfg.metrics.round), "each step's round is observed when the next round starts")
}

// The VPA's lower bound drifts at every sample during its first day (the
// confidence factor grows with the history); recomputed once per
// recommender interval, as upstream does, it is written once per interval
// instead of at every step.
func TestReconcileVPAIntervalLimitsStatusWrites(t *testing.T) {
	tests := []struct {
		name     string
		opts     []Option
		min, max float64 // status writes in 16 steps of 15 s (rounded bounds stay put at some)
	}{
		{"every step", []Option{WithVPARecommenderInterval(0)}, 8, 16},
		{"upstream's 1 min", nil, 1, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
				mode := v1alpha1.UpdateModeOff
				m.Spec.UpdatePolicy.UpdateMode = &mode
			}, tc.opts...)
			w.met.CPUUsage = 0.6 // HPA keeps 2 replicas
			written := w.r.cfg.metrics.statusWrites.WithLabelValues("written")
			for range 4 {
				w.step(t)
			}
			before := testutil.ToFloat64(written)
			for range 16 {
				w.step(t)
			}
			n := testutil.ToFloat64(written) - before
			assert.GreaterOrEqual(t, n, tc.min)
			assert.LessOrEqual(t, n, tc.max)
		})
	}
	_, err := New(fake.NewClientBuilder().Build(), ObserverFunc(func(context.Context, Query) (gym.Metrics, error) { return gym.Metrics{}, nil }), nil,
		WithVPARecommenderInterval(-time.Minute))
	assert.ErrorContains(t, err, "VPA recommender interval -1m0s must be non-negative")
}

func histCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, h.Write(&m))
	return m.GetHistogram().GetSampleCount()
}

// TestResizeOfVanishedPod: a pod deleted between the cache's list and its
// resize (NotFound naming it) is skipped and the others are resized in
// place; a NotFound that names no pod (a server without the resize
// subresource) still falls back to the pod template.
func TestResizeOfVanishedPod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      func(name string) error
		rolled   bool
		app2, tm string // app-2's CPU and the template's after the step
	}{
		{"pod gone", func(name string) error { return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name) }, false, "1", "500m"},
		{"no resize subresource", func(string) error { return apierrors.NewNotFound(schema.GroupResource{}, "") }, true, "500m", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
				m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: "aware"}}
				m.Spec.Agent.Bootstrap = ptr(false)
			})
			w.resizeNotFound = map[string]func(string) error{"app-1": tc.err}
			m := w.step(t)
			ts := metav1.NewTime(w.now)
			m.Status.Recommendation = &v1alpha1.RecommendedPodResources{Replicas: ptr(int32(2)), Recommender: "aware", Time: &ts,
				ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "workload",
					Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}}}}
			require.NoError(t, w.c.Status().Update(context.Background(), m))
			w.step(t)
			m = w.step(t)
			assert.Equal(t, tc.app2, w.podCPU(t, "app-2"))
			var dep appsv1.Deployment
			require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app"}, &dep))
			got := dep.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]
			assert.Equal(t, tc.tm, got.String(), "the pod template")
			c := condition(m, v1alpha1.ConditionResizedInPlace)
			require.NotNil(t, c)
			assert.Equal(t, tc.rolled, c.Reason == "FellBackToRollingUpdate", c.Reason)
		})
	}
}
