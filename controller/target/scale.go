package target

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// GetScale reads the scale subresource of an MPA's target. The target is
// a typed object when c's scheme knows its kind, else unstructured (any
// kind with a scale subresource, e.g. a custom resource). Deployments,
// StatefulSets and ReplicaSets are read with Get (from the cache of a
// manager's client: no request per step) and their scale derived as the
// API server derives it; other kinds are read through the subresource.
func GetScale(ctx context.Context, c client.Client, m *v1alpha1.MultidimPodAutoscaler) (client.Object, *autoscalingv1.Scale, error) {
	ref := m.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.scaleTargetRef.apiVersion %q: %w", ref.APIVersion, err)
	}
	gvk := gv.WithKind(ref.Kind)
	var target client.Object
	if o, err := c.Scheme().New(gvk); err == nil {
		if co, ok := o.(client.Object); ok {
			target = co
		}
	}
	if target == nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		target = u
	}
	target.SetNamespace(m.Namespace)
	target.SetName(ref.Name)
	if scale, ok, err := typedScale(ctx, c, target); ok || err != nil {
		if err != nil {
			return nil, nil, fmt.Errorf("scale of %s %s/%s: %w", ref.Kind, m.Namespace, ref.Name, err)
		}
		return target, scale, nil
	}
	scale := &autoscalingv1.Scale{}
	if err := c.SubResource("scale").Get(ctx, target, scale); err != nil {
		return nil, nil, fmt.Errorf("scale of %s %s/%s: %w", ref.Kind, m.Namespace, ref.Name, err)
	}
	return target, scale, nil
}

// typedScale derives the scale of the apps/v1 workloads from the object
// itself; ok is false for other kinds. The scale carries no resource
// version, so that an update of it is not refused for a cache that lags.
func typedScale(ctx context.Context, c client.Client, target client.Object) (*autoscalingv1.Scale, bool, error) {
	var (
		spec     *int32
		status   int32
		selector *metav1.LabelSelector
	)
	switch o := target.(type) {
	case *appsv1.Deployment:
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return nil, true, err
		}
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector
	case *appsv1.StatefulSet:
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return nil, true, err
		}
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector
	case *appsv1.ReplicaSet:
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return nil, true, err
		}
		spec, status, selector = o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector
	default:
		return nil, false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, true, fmt.Errorf("spec.selector: %w", err)
	}
	replicas := int32(1) // the API's default
	if spec != nil {
		replicas = *spec
	}
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: target.GetName(), Namespace: target.GetNamespace(), UID: target.GetUID()},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
		Status:     autoscalingv1.ScaleStatus{Replicas: status, Selector: sel.String()},
	}, true, nil
}
