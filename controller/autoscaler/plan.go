package autoscaler

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/target"
)

// Resources are one container's CPU (cores) and memory (bytes) limits; a
// zero field is unset. They are read from pods in package target, where
// the type lives.
type Resources = target.Resources

// quantity is target.Amount's inverse, rounded to whole millicores or
// bytes.
func quantity(n corev1.ResourceName, v float64) resource.Quantity {
	if n == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(int64(math.Round(v*1000)), resource.DecimalSI)
	}
	return *resource.NewQuantity(int64(math.Round(v)), resource.BinarySI)
}

// Recommended reads the target of container from a recommendation (its
// own entry, else a "*" entry, as for container policies); resources the
// target leaves out keep their value in cur. It reports whether an entry
// applied.
func Recommended(rec *v1alpha1.RecommendedPodResources, container string, cur Resources) (Resources, bool) {
	if rec == nil {
		return cur, false
	}
	var c *v1alpha1.RecommendedContainerResources
	for i := range rec.ContainerRecommendations {
		switch e := &rec.ContainerRecommendations[i]; e.ContainerName {
		case container:
			c = e
		case "*":
			if c == nil {
				c = e
			}
		}
	}
	if c == nil {
		return cur, false
	}
	out := cur
	if q, ok := c.Target[corev1.ResourceCPU]; ok {
		out.CPU = target.Amount(corev1.ResourceCPU, q)
	}
	if q, ok := c.Target[corev1.ResourceMemory]; ok {
		out.Memory = target.Amount(corev1.ResourceMemory, q)
	}
	return out, true
}

// ResourceList is r as a resource list, rounded to whole millicores and
// bytes.
func ResourceList(r Resources) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    quantity(corev1.ResourceCPU, r.CPU),
		corev1.ResourceMemory: quantity(corev1.ResourceMemory, r.Memory),
	}
}

// Round brings resources to what the API stores without churn: whole
// millicores and whole MiB.
func Round(r Resources) Resources {
	return Resources{CPU: math.Round(r.CPU*1000) / 1000, Memory: math.Round(r.Memory/mib) * mib}
}

const mib = 1 << 20

// DesiredReplicas bounds a recommended replica count by the constraints
// and, when the agent acts, by the profile's maxReplicaChange per step. It
// reports whether anything was capped.
func DesiredReplicas(p Policy, current, recommended int32, agent bool) (int32, bool) {
	want := recommended
	if agent && p.Agent != nil && p.Agent.Actions.MaxReplicaChange != nil && current > 0 {
		d := *p.Agent.Actions.MaxReplicaChange
		want = min(max(want, current-d), current+d)
	}
	want = min(max(want, int32(p.Bounds.MinReplicas)), int32(min(p.Bounds.MaxReplicas, math.MaxInt32)))
	return want, want != recommended
}

// TargetResources bounds recommended resources by the resource policy and,
// when the agent acts, by the profile's per-step change limits; resources
// the policy does not control keep their current value. It reports whether
// anything was capped.
func TargetResources(p Policy, current, recommended Resources, agent bool) (Resources, bool) {
	out := recommended
	if agent && p.Agent != nil {
		a := p.Agent.Actions
		if a.MaxCPUChange != nil && current.CPU > 0 {
			d := target.Amount(corev1.ResourceCPU, *a.MaxCPUChange)
			out.CPU = min(max(out.CPU, current.CPU-d), current.CPU+d)
		}
		if a.MaxMemoryChange != nil && current.Memory > 0 {
			d := float64(a.MaxMemoryChange.Value())
			out.Memory = min(max(out.Memory, current.Memory-d), current.Memory+d)
		}
	}
	b := p.Bounds
	out.CPU = min(max(out.CPU, b.MinCPU), b.MaxCPU)
	out.Memory = min(max(out.Memory, b.MinMemory), b.MaxMemory)
	out = Round(out)
	limited := out != Round(recommended)
	if !p.ScaleCPU {
		out.CPU = current.CPU
	}
	if !p.ScaleMemory {
		out.Memory = current.Memory
	}
	return out, limited
}

// Differs reports whether a container's current resources differ from the
// target in a controlled resource (after rounding).
func Differs(p Policy, current, want Resources) bool {
	c, t := Round(current), Round(want)
	return (p.ScaleCPU && c.CPU != t.CPU) || (p.ScaleMemory && c.Memory != t.Memory)
}

// UpdateThreshold is the relative change of a controlled resource below
// which the built-in recommender leaves running pods' resources alone
// (upstream VPA's updater uses the same 10 %; see Resize).
const UpdateThreshold = 0.1

// significant reports whether moving a container from current to target
// is worth a resize: a controlled resource changes by more than threshold
// (a share of its current value), or current lies outside the policy's
// bounds.
func significant(p Policy, current, want Resources, threshold float64) bool {
	b := p.Bounds
	check := func(cur, tgt, lo, hi float64) bool {
		if !(cur > 0) || cur < lo || cur > hi {
			return true
		}
		return math.Abs(tgt-cur) > threshold*cur*(1+1e-9)
	}
	return (p.ScaleCPU && check(current.CPU, want.CPU, b.MinCPU-1e-9, b.MaxCPU+1e-9)) ||
		(p.ScaleMemory && check(current.Memory, want.Memory, b.MinMemory-0.5, b.MaxMemory+0.5))
}

// Resize is what running pods get when a recommendation moves them from
// current to target: target when the move is significant, else current
// (small changes are not worth a resize, as in upstream VPA's updater).
// A move is significant when a controlled resource changes by more than
// the agent profile's minResizePercent (the agent acting) or UpdateThreshold
// (the built-in recommender), or when current lies outside the policy's
// bounds. It reports whether the pods are resized.
func Resize(p Policy, current, want Resources, agent bool) (Resources, bool) {
	threshold := UpdateThreshold
	if agent && p.Agent != nil {
		threshold = p.Agent.Actions.MinResizeFraction()
	}
	if !Differs(p, current, want) || !significant(p, current, want, threshold) {
		return current, false
	}
	return want, true
}

// podsOffTarget reports whether a pod's container, as specified, is a
// significant move (Resize) away from target. Resize judges the pods'
// mean; this judges each pod, as upstream VPA's updater does, so that a pod
// unlike the others (created from the workload's template while the
// admission webhook was off or failed open) is brought to the target even
// when the mean is on it.
func podsOffTarget(p Policy, pods []corev1.Pod, container string, want Resources, agent bool) bool {
	for i := range pods {
		if podOffTarget(p, &pods[i], container, want, agent) {
			return true
		}
	}
	return false
}

func podOffTarget(p Policy, pod *corev1.Pod, container string, want Resources, agent bool) bool {
	spec, ok := target.SpecResources(pod, container)
	if !ok {
		return false
	}
	_, resize := Resize(p, spec, want, agent)
	return resize
}

// WithResources returns r with its controlled limits set to t. A request
// keeps its ratio to the limit it had (requests = limits stays so); a
// request without a limit is set to the target.
func WithResources(p Policy, r corev1.ResourceRequirements, t Resources) corev1.ResourceRequirements {
	out := *r.DeepCopy()
	set := func(n corev1.ResourceName, v float64) {
		q := quantity(n, v)
		lim, hasLim := out.Limits[n]
		req, hasReq := out.Requests[n]
		switch {
		case hasLim && hasReq && lim.Cmp(req) != 0 && !lim.IsZero():
			ratio := req.AsApproximateFloat64() / lim.AsApproximateFloat64()
			out.Limits[n] = q
			out.Requests[n] = quantity(n, v*ratio)
		case hasLim:
			out.Limits[n] = q
			if hasReq {
				out.Requests[n] = q
			}
		default:
			if out.Requests == nil {
				out.Requests = corev1.ResourceList{}
			}
			out.Requests[n] = q
		}
	}
	if p.ScaleCPU && t.CPU > 0 {
		set(corev1.ResourceCPU, t.CPU)
	}
	if p.ScaleMemory && t.Memory > 0 {
		set(corev1.ResourceMemory, t.Memory)
	}
	return out
}

// ToAllocation joins replicas and resources.
func ToAllocation(replicas int32, r Resources) recommender.Allocation {
	return recommender.Allocation{Replicas: int(replicas), CPU: r.CPU, Memory: r.Memory}
}
