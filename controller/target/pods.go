package target

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodLabelIndex is the name of a cache index of pods by each of their
// labels, as "key=value" (IndexPods).
const PodLabelIndex = "aware.label"

// IndexPods adds PodLabelIndex to a cache. A cache lists by namespace
// through its own index but filters by labels pod by pod, so without this
// every target's pod lookup scans its namespace: with one pod set per MPA
// in a namespace, a round's lookups grow with the square of the MPAs
// (18 % of the controller's CPU at 1000 MPAs, docs/controller.md).
func IndexPods(ctx context.Context, fi client.FieldIndexer) error {
	return fi.IndexField(ctx, &corev1.Pod{}, PodLabelIndex, podLabels)
}

// podLabels are a pod's labels as "key=value", PodLabelIndex's values.
func podLabels(o client.Object) []string {
	out := make([]string, 0, len(o.GetLabels()))
	for k, v := range o.GetLabels() {
		out = append(out, k+"="+v)
	}
	return out
}

// exactLabel is a "key=value" every pod that sel matches carries: its
// first requirement of one key equal to one value; false when it has none
// (a selector of set-based requirements only).
func exactLabel(sel labels.Selector) (string, bool) {
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if v := r.Values(); v.Len() == 1 {
				return r.Key() + "=" + v.UnsortedList()[0], true
			}
		}
	}
	return "", false
}

// Pods lists the pods of a target's selector (the scale
// subresource's status.selector) that are neither terminating nor finished.
// With indexed, c is a cache with PodLabelIndex (IndexPods) and the pods
// are looked up by one of the selector's exact labels, then filtered by
// the whole selector; without it, or when the selector has no exact label,
// c filters the namespace's pods. extra options go to the List: a caller
// that only reads the pods may pass client.UnsafeDisableDeepCopy, so that a
// cache returns its own objects instead of deep copies.
func Pods(ctx context.Context, c client.Reader, ns, selector string, indexed bool, extra ...client.ListOption) ([]corev1.Pod, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("target selector %q: %w", selector, err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("target selector %q selects every pod; refusing", selector)
	}
	opts := append([]client.ListOption{client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}}, extra...)
	if label, ok := exactLabel(sel); ok && indexed {
		opts = append(opts, client.MatchingFields{PodLabelIndex: label})
	}
	var list corev1.PodList
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("pods of %s: %w", ns, err)
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && len(p.Spec.Containers) > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

// Unschedulable reports whether the scheduler found no node for the
// Pending pod p, and its message saying why.
func Unschedulable(p *corev1.Pod) (string, bool) {
	if p.Status.Phase != corev1.PodPending {
		return "", false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message, c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return "", false
}
