package admission

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

func testMPA(mode v1alpha1.UpdateMode, cpu string) *v1alpha1.MultidimPodAutoscaler {
	one := int32(1)
	m := &v1alpha1.MultidimPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns"},
		Spec: v1alpha1.MultidimPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "app"},
			UpdatePolicy:   &v1alpha1.PodUpdatePolicy{UpdateMode: &mode},
			Constraints:    &v1alpha1.ScalingConstraints{MinReplicas: &one, MaxReplicas: 10},
			ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
				ContainerName: "workload",
				MaxAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			}}},
		},
	}
	if cpu != "" {
		m.Status.Recommendation = &v1alpha1.RecommendedPodResources{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{
			ContainerName: "workload", Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("512Mi")},
		}}}
	}
	return m
}

func testPod() *corev1.Pod {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "sidecar", Resources: corev1.ResourceRequirements{Limits: res.DeepCopy()}},
		{Name: "workload", Resources: corev1.ResourceRequirements{Requests: res.DeepCopy(), Limits: res.DeepCopy()}},
	}}}
}

func TestMutate(t *testing.T) {
	tests := []struct {
		name    string
		m       *v1alpha1.MultidimPodAutoscaler
		changed bool
		cpu     string
		msg     string
	}{
		{"sized", testMPA(v1alpha1.UpdateModeInPlaceOrRecreate, "1"), true, "1", "resources set by MultidimPodAutoscaler app"},
		{"capped by the policy", testMPA(v1alpha1.UpdateModeInitial, "3"), true, "2", ""},
		{"mode off", testMPA(v1alpha1.UpdateModeOff, "1"), false, "500m", "update mode Off"},
		{"no recommendation", testMPA(v1alpha1.UpdateModeInPlaceOrRecreate, ""), false, "500m", "no recommendation yet"},
		{"already there", testMPA(v1alpha1.UpdateModeInPlaceOrRecreate, "500m"), false, "500m", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod()
			if tt.name == "already there" {
				p.Spec.Containers[1].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("512Mi")
				p.Spec.Containers[1].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("512Mi")
			}
			changed, msg := Mutate(tt.m, p)
			assert.Equal(t, tt.changed, changed)
			if tt.msg != "" {
				assert.Equal(t, tt.msg, msg)
			}
			w := p.Spec.Containers[1].Resources
			assert.Equal(t, tt.cpu, w.Limits.Cpu().String())
			assert.Equal(t, tt.cpu, w.Requests.Cpu().String(), "requests = limits stay so")
			assert.Equal(t, "500m", p.Spec.Containers[0].Resources.Limits.Cpu().String(), "other containers untouched")
			if changed {
				assert.Equal(t, "app", p.Annotations[SizedByAnnotation])
				assert.Equal(t, "512Mi", w.Limits.Memory().String())
			}
		})
	}
}

func TestEnsureCerts(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca, err := EnsureCerts(dir, []string{"127.0.0.1", "aware.aware-system.svc"}, now)
	require.NoError(t, err)
	pair, err := tls.LoadX509KeyPair(dir+"/"+CertFile, dir+"/"+KeyFile)
	require.NoError(t, err)
	require.NotEmpty(t, pair.Certificate)
	again, err := EnsureCerts(dir, []string{"127.0.0.1", "aware.aware-system.svc"}, now)
	require.NoError(t, err)
	assert.Equal(t, ca, again, "a valid pair is kept")
	other, err := EnsureCerts(dir, []string{"other.svc"}, now)
	require.NoError(t, err)
	assert.NotEqual(t, ca, other, "new hosts: new certificates")
	late, err := EnsureCerts(dir, []string{"other.svc"}, now.Add(300*24*time.Hour))
	require.NoError(t, err)
	assert.NotEqual(t, other, late, "renewed when less than a third of the validity remains")
	_, err = EnsureCerts(dir, nil, now)
	assert.ErrorContains(t, err, "no host names")
}
