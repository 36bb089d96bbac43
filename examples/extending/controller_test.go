package extending_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/gym"
)

// TestRecommenderInTheLiveController: the step-scaler that
// baseline_test.go registered once, with baselines.Register, is known to
// the live controller too; the controller's reconciler, on a fake API
// server, builds it for the MPA that names it and acts on it (its
// recommendation in the status, the decided replicas), while an MPA naming
// a recommender nobody registered waits for that external recommender to
// write one, as before.
func TestRecommenderInTheLiveController(t *testing.T) {
	ctx := context.Background()
	_, ok := autoscaler.FindRecommender("step-scaler")
	require.True(t, ok, "registered with the controller by baselines.Register")
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1alpha1.AddToScheme(s))
	objs := workload("shop", "step-scaler")
	objs = append(objs, workload("cart", "my-agent")...)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.MultidimPodAutoscaler{}).Build()
	// Each target's two pods of 500m use 0.9 cores: 90 % of their CPU,
	// above step-scaler's 80 %.
	obs := autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) {
		return gym.Metrics{ReadyReplicas: 2, CPUUsage: 0.9, MemoryUsage: 300 * gym.MiB, MemoryPeak: 160 * gym.MiB,
			ArrivalRate: 40, ProcessedRate: 40, LatencyP99: 0.05}, nil
	})
	now := time.Date(2026, 1, 1, 0, 0, 15, 0, time.UTC)
	r, err := autoscaler.New(c, obs, nil, autoscaler.WithClock(func() time.Time { return now }))
	require.NoError(t, err)

	for _, tt := range []struct {
		app, recommender string
		external         bool
		recommendedBy    string // status.recommendation.recommender
		desired          int32
		condition        string // the RecommendationProvided condition's message
	}{
		{"shop", "step-scaler", false, "step-scaler", 3, "acting on the recommendation of step-scaler"},
		{"cart", "my-agent", true, "", 2, `recommender "my-agent" has not written a recommendation in the last 3 steps; holding`},
	} {
		t.Run(tt.recommender, func(t *testing.T) {
			key := types.NamespacedName{Namespace: "default", Name: tt.app}
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
			require.NoError(t, err)
			var m v1alpha1.MultidimPodAutoscaler
			require.NoError(t, c.Get(ctx, key, &m))
			pol, err := autoscaler.PolicyOf(&m)
			require.NoError(t, err)
			assert.Equal(t, tt.external, pol.External())
			if tt.recommendedBy == "" {
				assert.Nil(t, m.Status.Recommendation, "only the external recommender writes it")
			} else {
				require.NotNil(t, m.Status.Recommendation)
				assert.Equal(t, tt.recommendedBy, m.Status.Recommendation.Recommender)
				assert.Equal(t, tt.desired, *m.Status.Recommendation.Replicas)
			}
			assert.Equal(t, tt.desired, m.Status.DesiredReplicas, "the replicas the updater applies next")
			cond := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionRecommendationProvided)
			require.NotNil(t, cond)
			assert.Equal(t, tt.condition, cond.Message)
		})
	}
}

// workload is a Deployment of two pods (500m, 512Mi) and its MPA, whose
// spec.recommenders names rec.
func workload(name, rec string) []client.Object {
	labels := map[string]string{"app": name}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	ctr := corev1.Container{Name: "workload", Image: "x", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}
	replicas := int32(2)
	objs := []client.Object{&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}}}},
		Status: appsv1.DeploymentStatus{Replicas: 2},
	}}
	for _, p := range []string{"-1", "-2"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + p, Namespace: "default", Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	return append(objs, &v1alpha1.MultidimPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Generation: 1},
		Spec: v1alpha1.MultidimPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Constraints:    &v1alpha1.ScalingConstraints{MaxReplicas: 10},
			Recommenders:   []v1alpha1.RecommenderSelector{{Name: rec}},
		},
	})
}
