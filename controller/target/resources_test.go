package target

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func limits(cpu, mem string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}
}

// TestPodResources: the scaled container is the named one, else the
// pods' first; its resources are read as applied (the kubelet's report)
// or as specified, and averaged over the pods that have it.
func TestPodResources(t *testing.T) {
	pod := func(spec, applied *corev1.ResourceRequirements) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar"}, {Name: "workload", Resources: *spec}}}}
		if applied != nil {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "workload", Resources: applied}}
		}
		return p
	}
	half, one := limits("500m", "256Mi"), limits("1", "512Mi")
	resized := pod(&half, &one) // resized in place: the spec says 500m, the kubelet applied 1
	plain := pod(&half, nil)
	for _, tt := range []struct {
		name          string
		pods          []corev1.Pod
		named, scaled string
		mean          Resources
	}{
		{"named", []corev1.Pod{resized, plain}, "workload", "workload", Resources{CPU: 0.75, Memory: 384 << 20}},
		{"first container", []corev1.Pod{plain}, "", "sidecar", Resources{}},
		{"no pods", nil, "", "", Resources{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ScaledContainer(tt.named, tt.pods)
			assert.Equal(t, tt.scaled, c)
			assert.Equal(t, tt.mean, MeanResources(tt.pods, c))
		})
	}
	got, ok := AppliedResources(&resized, "workload")
	assert.True(t, ok)
	assert.Equal(t, Resources{CPU: 1, Memory: 512 << 20}, got)
	got, ok = SpecResources(&resized, "workload")
	assert.True(t, ok)
	assert.Equal(t, Resources{CPU: 0.5, Memory: 256 << 20}, got)
	_, ok = SpecResources(&resized, "missing")
	assert.False(t, ok)
}

// TestUnschedulable: only a Pending pod the scheduler marked
// Unschedulable, with the scheduler's message.
func TestUnschedulable(t *testing.T) {
	cond := func(phase corev1.PodPhase, st corev1.ConditionStatus, reason string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: st, Reason: reason, Message: "0/1 nodes are available: insufficient cpu"}}}}
	}
	for _, tt := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"unschedulable", cond(corev1.PodPending, corev1.ConditionFalse, corev1.PodReasonUnschedulable), true},
		{"scheduling gated", cond(corev1.PodPending, corev1.ConditionFalse, corev1.PodReasonSchedulingGated), false},
		{"running", cond(corev1.PodRunning, corev1.ConditionFalse, corev1.PodReasonUnschedulable), false},
		{"not yet considered", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg, ok := Unschedulable(tt.pod)
			assert.Equal(t, tt.want, ok)
			if ok {
				assert.Contains(t, msg, "insufficient cpu")
			}
		})
	}
}
