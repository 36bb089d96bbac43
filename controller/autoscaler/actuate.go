package autoscaler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/target"
)

// scaleTo sets the target's replicas through its scale subresource.
func (r *Reconciler) scaleTo(ctx context.Context, tgt client.Object, scale *autoscalingv1.Scale, replicas int32) error {
	start := time.Now()
	s := scale.DeepCopy()
	s.Spec.Replicas = replicas
	if err := r.c.SubResource("scale").Update(ctx, tgt, client.WithSubResourceBody(s)); err != nil {
		return fmt.Errorf("scale %s/%s to %d: %w", tgt.GetNamespace(), tgt.GetName(), replicas, err)
	}
	r.cfg.metrics.actuation.WithLabelValues("replicas").Observe(time.Since(start).Seconds())
	r.cfg.metrics.decisions.WithLabelValues("replicas").Inc()
	return nil
}

// applyResources brings the container of every pod off target (a
// significant move away from res, judged per pod) to res: in place
// through pods/resize (InPlaceOrRecreate), falling back to the pod
// template (a rolling update) when the cluster refuses the resize or
// reports it infeasible; Recreate goes to the template directly.
func (r *Reconciler) applyResources(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol Policy, tgt client.Object, pods []corev1.Pod, container string, res Resources, agent bool, out *outcome, log *slog.Logger) error {
	if container == "" {
		return nil
	}
	toTemplate := pol.Mode == v1alpha1.UpdateModeRecreate
	var refused error
	if !toTemplate {
		resized := 0
		for i := range pods {
			p := &pods[i]
			if infeasible(p) {
				refused = fmt.Errorf("pod %s: resize reported infeasible", p.Name)
				break
			}
			if !podOffTarget(pol, p, container, res, agent) {
				continue
			}
			if err := r.resize(ctx, p, pol, container, res); err != nil {
				if podGone(err, p) {
					// Deleted since the cache listed it (a scale-down,
					// a rollout): nothing to resize. Taking it for a
					// refusal rolled the whole target.
					log.Debug("pod gone before its resize", "pod", p.Name)
					continue
				}
				if refusedResize(err) {
					refused = err
					break
				}
				r.cfg.metrics.errors.WithLabelValues("resize").Inc()
				return err
			}
			resized++
		}
		if refused == nil {
			if resized > 0 {
				out.set(m.Generation, v1alpha1.ConditionResizedInPlace, true, "Resized", fmt.Sprintf("%d pods resized in place to (%gcores, %gMi)", resized, res.CPU, res.Memory/mib))
				r.event(m, corev1.EventTypeNormal, "ResizedInPlace", fmt.Sprintf("%d pods → (%gcores, %gMi)", resized, res.CPU, res.Memory/mib))
			}
			return nil
		}
		toTemplate = true
		log.Info("in-place resize refused; falling back to a rolling update", "err", refused)
		r.cfg.metrics.errors.WithLabelValues("resize_refused").Inc()
	}
	changed, err := r.patchTemplate(ctx, tgt, pol, container, res)
	if err != nil {
		r.cfg.metrics.errors.WithLabelValues("template").Inc()
		return err
	}
	if refused != nil {
		out.set(m.Generation, v1alpha1.ConditionResizedInPlace, false, "FellBackToRollingUpdate", "in-place resize refused: "+refused.Error())
	}
	if changed {
		r.event(m, corev1.EventTypeNormal, "UpdatedTemplate", fmt.Sprintf("pod template → (%gcores, %gMi); pods roll", res.CPU, res.Memory/mib))
	}
	return nil
}

// resize patches one pod's container through the resize subresource.
func (r *Reconciler) resize(ctx context.Context, p *corev1.Pod, pol Policy, container string, res Resources) error {
	var cur corev1.ResourceRequirements
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			cur = c.Resources
		}
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"name": container, "resources": WithResources(pol, cur, res)},
	}}})
	if err != nil {
		return err
	}
	start := time.Now()
	if err := r.c.SubResource("resize").Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		return fmt.Errorf("resize pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	r.cfg.metrics.actuation.WithLabelValues("resize").Observe(time.Since(start).Seconds())
	r.cfg.metrics.decisions.WithLabelValues("resize").Inc()
	return nil
}

// refusedResize reports whether the API refused an in-place resize for
// good (unsupported subresource, forbidden by policy, or invalid for this
// pod, e.g. a QoS class change), as opposed to a transient failure.
func refusedResize(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsNotFound(err) || apierrors.IsBadRequest(err)
}

// podGone reports whether a resize failed because the pod itself no longer
// exists (NotFound naming it), as opposed to a server without the resize
// subresource (NotFound naming nothing), which refusedResize covers.
func podGone(err error, p *corev1.Pod) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d != nil && d.Name == p.Name && d.Kind == "pods"
}

// infeasible reports whether the kubelet declared a pod's pending resize
// infeasible (condition PodResizePending, reason Infeasible).
func infeasible(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonInfeasible {
			return true
		}
	}
	return false
}

// patchTemplate sets the container's resources in the target's pod
// template (spec.template.spec.containers); it reports whether anything
// changed.
func (r *Reconciler) patchTemplate(ctx context.Context, tgt client.Object, pol Policy, container string, res Resources) (bool, error) {
	gvk, err := r.c.GroupVersionKindFor(tgt)
	if err != nil {
		return false, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := r.c.Get(ctx, client.ObjectKeyFromObject(tgt), obj); err != nil {
		return false, fmt.Errorf("pod template of %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	containers, found, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if err != nil || !found {
		return false, fmt.Errorf("%s %s/%s has no spec.template.spec.containers", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
	var cur corev1.ResourceRequirements
	present := false
	for _, c := range containers {
		cm, _ := c.(map[string]any)
		if cm["name"] != container {
			continue
		}
		present = true
		if rr, ok := cm["resources"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rr, &cur); err != nil {
				return false, fmt.Errorf("resources of container %s in %s/%s: %w", container, obj.GetNamespace(), obj.GetName(), err)
			}
		}
	}
	if !present {
		return false, fmt.Errorf("%s %s/%s has no container %q", obj.GetKind(), obj.GetNamespace(), obj.GetName(), container)
	}
	if !Differs(pol, target.ContainerResources(cur), res) {
		return false, nil
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": container, "resources": WithResources(pol, cur, res)}},
	}}}})
	if err != nil {
		return false, err
	}
	start := time.Now()
	if err := r.c.Patch(ctx, obj, client.RawPatch(types.StrategicMergePatchType, body)); err != nil {
		return false, fmt.Errorf("pod template of %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	r.cfg.metrics.actuation.WithLabelValues("template").Observe(time.Since(start).Seconds())
	r.cfg.metrics.decisions.WithLabelValues("template").Inc()
	return true, nil
}
