package target

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resources are one container's CPU (cores) and memory (bytes) limits; a
// zero field is unset.
type Resources struct {
	CPU, Memory float64
}

// Amount is a quantity as a float: cores for CPU (whole millicores),
// bytes otherwise.
func Amount(n corev1.ResourceName, q resource.Quantity) float64 {
	if n == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}

// ContainerResources reads the limits of a container (the requests when a
// limit is unset).
func ContainerResources(r corev1.ResourceRequirements) Resources {
	get := func(n corev1.ResourceName) float64 {
		q, ok := r.Limits[n]
		if !ok {
			q, ok = r.Requests[n]
		}
		if !ok {
			return 0
		}
		return Amount(n, q)
	}
	return Resources{CPU: get(corev1.ResourceCPU), Memory: get(corev1.ResourceMemory)}
}

// ScaledContainer is the container an MPA scales: named (its resource
// policy's container), else the first container of the pods ("" without
// pods).
func ScaledContainer(named string, pods []corev1.Pod) string {
	if named == "" && len(pods) > 0 {
		return pods[0].Spec.Containers[0].Name
	}
	return named
}

// MeanResources is the mean over pods of a container's limits as applied
// (the kubelet's report in the pod status), else as specified.
func MeanResources(pods []corev1.Pod, container string) Resources {
	var sum Resources
	n := 0
	for i := range pods {
		r, ok := podResources(&pods[i], container, true)
		if !ok {
			continue
		}
		sum.CPU += r.CPU
		sum.Memory += r.Memory
		n++
	}
	if n == 0 {
		return Resources{}
	}
	return Resources{CPU: sum.CPU / float64(n), Memory: sum.Memory / float64(n)}
}

// AppliedResources are a pod container's limits as applied (the kubelet's
// report in the pod status), else as specified; false when the pod has no
// such container.
func AppliedResources(p *corev1.Pod, container string) (Resources, bool) {
	return podResources(p, container, true)
}

// SpecResources are a pod container's limits as specified in the pod's
// spec; false when the pod has no such container.
func SpecResources(p *corev1.Pod, container string) (Resources, bool) {
	return podResources(p, container, false)
}

func podResources(p *corev1.Pod, container string, applied bool) (Resources, bool) {
	if applied {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == container && cs.Resources != nil {
				return ContainerResources(*cs.Resources), true
			}
		}
	}
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return ContainerResources(c.Resources), true
		}
	}
	return Resources{}, false
}
