package autoscaler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
	"github.com/aware-autoscaler/aware/gym"
)

func ptr[T any](v T) *T { return &v }

// testMPA is a valid MPA like the generator's.
func testMPA() *v1alpha1.MultidimPodAutoscaler {
	mode := v1alpha1.UpdateModeInPlaceOrRecreate
	return &v1alpha1.MultidimPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", Generation: 1},
		Spec: v1alpha1.MultidimPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "app"},
			UpdatePolicy:   &v1alpha1.PodUpdatePolicy{UpdateMode: &mode},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(60))}}}},
			Constraints: &v1alpha1.ScalingConstraints{MinReplicas: ptr(int32(1)), MaxReplicas: 20},
			ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
				ContainerName: "workload",
				MinAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("128m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2048m"), corev1.ResourceMemory: resource.MustParse("3Gi")},
			}}},
			Agent: &v1alpha1.AgentProfile{SLO: v1alpha1.ProfileSLO{LatencyP99Seconds: 0.05}},
		},
	}
}

func TestPolicyOf(t *testing.T) {
	p, err := PolicyOf(testMPA())
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.UpdateModeInPlaceOrRecreate, p.Mode)
	assert.False(t, p.External())
	assert.Equal(t, "workload", p.Container)
	assert.True(t, p.ScaleCPU && p.ScaleMemory)
	assert.Equal(t, 0.6, p.CPUTarget, "spec.metrics wins over the profile's target")
	want := gym.DefaultBounds()
	want.MinMemory = 256 * gym.MiB // the fixture's minAllowed
	assert.Equal(t, want, p.GymBounds())
	assert.Equal(t, gym.SLO{Kind: gym.LatencySLO, Target: 0.05}, p.SLO())
	require.NotNil(t, p.Agent)
	assert.Equal(t, 100, p.Agent.EpisodeLength, "the profile is defaulted")
	assert.Equal(t, hpa.DefaultBehavior(), p.Behavior)
}

func TestPolicyOfChoices(t *testing.T) {
	off := v1alpha1.ContainerScalingModeOff
	tests := []struct {
		name  string
		edit  func(*v1alpha1.MultidimPodAutoscaler)
		check func(*testing.T, Policy)
	}{
		{"external recommender", func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: "aware"}}
		}, func(t *testing.T, p Policy) { assert.True(t, p.External()) }},
		{"memory only", func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.ResourcePolicy.ContainerPolicies[0].ControlledResources = []corev1.ResourceName{corev1.ResourceMemory}
		}, func(t *testing.T, p Policy) { assert.True(t, !p.ScaleCPU && p.ScaleMemory) }},
		{"named container beats the wildcard", func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.ResourcePolicy.ContainerPolicies = append([]v1alpha1.ContainerResourcePolicy{{ContainerName: "*"}}, m.Spec.ResourcePolicy.ContainerPolicies...)
		}, func(t *testing.T, p Policy) { assert.Equal(t, "workload", p.Container) }},
		{"every container off", func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.ResourcePolicy.ContainerPolicies[0].Mode = &off
		}, func(t *testing.T, p Policy) { assert.False(t, p.ScaleCPU || p.ScaleMemory) }},
		{"no metrics: profile target", func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.Metrics = nil
			m.Spec.Agent.Targets.CPU = 0.5
		}, func(t *testing.T, p Policy) { assert.Equal(t, 0.5, p.CPUTarget) }},
		{"behaviour", func(m *v1alpha1.MultidimPodAutoscaler) {
			disabled := autoscalingv2.DisabledPolicySelect
			m.Spec.Constraints.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled},
				ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(30)),
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}}},
			}
		}, func(t *testing.T, p Policy) {
			assert.Equal(t, hpa.SelectDisabled, p.Behavior.ScaleDown.Select)
			assert.Equal(t, []hpa.Policy{{Type: hpa.Pods, Value: 2, Period: 60e9}}, p.Behavior.ScaleUp.Policies)
			assert.EqualValues(t, 30e9, p.Behavior.ScaleUp.StabilizationWindow)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMPA()
			tt.edit(m)
			p, err := PolicyOf(m)
			require.NoError(t, err)
			tt.check(t, p)
		})
	}
}

func TestPolicyOfErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*v1alpha1.MultidimPodAutoscaler)
		want []string
	}{
		{"no constraints", func(m *v1alpha1.MultidimPodAutoscaler) { m.Spec.Constraints = nil }, []string{"spec.constraints: maxReplicas is required"}},
		{"no target", func(m *v1alpha1.MultidimPodAutoscaler) { m.Spec.ScaleTargetRef.Name = "" }, []string{"spec.scaleTargetRef"}},
		{"min above max", func(m *v1alpha1.MultidimPodAutoscaler) { m.Spec.Constraints.MinReplicas = ptr(int32(30)) }, []string{"maxReplicas 20 is below minReplicas 30"}},
		{"min cpu above default max", func(m *v1alpha1.MultidimPodAutoscaler) {
			delete(m.Spec.ResourcePolicy.ContainerPolicies[0].MaxAllowed, corev1.ResourceCPU)
			m.Spec.ResourcePolicy.ContainerPolicies[0].MinAllowed[corev1.ResourceCPU] = resource.MustParse("100")
		}, []string{"containerPolicies[workload]: minAllowed exceeds maxAllowed"}},
		{"bad agent", func(m *v1alpha1.MultidimPodAutoscaler) { m.Spec.Agent.Alpha = ptr(1.5) }, []string{"spec.agent: alpha: 1.5"}},
		{"metric without utilisation", func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.Metrics[0].Resource.Target = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType}
		}, []string{"spec.metrics[0]: the cpu metric must have an averageUtilization target"}},
		{"bad policy", func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.Constraints.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: "Weird", Value: 1, PeriodSeconds: 1}, {Type: autoscalingv2.PodsScalingPolicy, Value: 0, PeriodSeconds: 1}}}}
		}, []string{`scaleUp.policies[0].type: unknown "Weird"`, "scaleUp.policies[1]: value and periodSeconds must be positive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMPA()
			tt.edit(m)
			_, err := PolicyOf(m)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
