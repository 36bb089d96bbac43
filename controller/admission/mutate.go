package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/target"
)

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;create;update

// Path is where the webhook serves.
const Path = "/mutate-v1-pod"

// PodMutator sets the recommended resources on new pods.
type PodMutator struct {
	c   client.Reader
	log *slog.Logger
}

// NewPodMutator returns the webhook handler; c should be the manager's
// cached reader (MPAs and ReplicaSets are read on every pod creation).
func NewPodMutator(c client.Reader, log *slog.Logger) *PodMutator {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PodMutator{c: c, log: log}
}

// Handle implements admission.Handler. It never refuses a pod: with no
// MPA, no recommendation, or an update mode of Off, the pod is admitted
// unchanged.
func (h *PodMutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("pod: %w", err))
	}
	ns := req.Namespace
	if ns == "" {
		ns = pod.Namespace
	}
	kind, name, err := h.owner(ctx, ns, &pod)
	if err != nil {
		h.log.Warn("owner of new pod not found; admitted unchanged", "namespace", ns, "pod", pod.GenerateName, "err", err)
		return admission.Allowed("owner unknown")
	}
	if kind == "" {
		return admission.Allowed("not owned by a scalable workload")
	}
	m, err := h.mpaFor(ctx, ns, kind, name)
	if err != nil {
		h.log.Warn("MPAs not readable; pod admitted unchanged", "namespace", ns, "err", err)
		return admission.Allowed("MPAs unreadable")
	}
	if m == nil {
		return admission.Allowed("no MultidimPodAutoscaler")
	}
	changed, msg := Mutate(m, &pod)
	if !changed {
		return admission.Allowed(msg)
	}
	raw, err := json.Marshal(&pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	h.log.Debug("new pod sized", "namespace", ns, "mpa", m.Name, "detail", msg)
	resp := admission.PatchResponseFromRaw(req.Object.Raw, raw)
	resp.Result = &metav1.Status{Message: msg}
	return resp
}

// Mutate sets the controlled container's resources of pod to m's
// recommendation in force, bounded by its policy. It reports whether the
// pod changed and why (not).
func Mutate(m *v1alpha1.MultidimPodAutoscaler, pod *corev1.Pod) (bool, string) {
	pol, err := autoscaler.PolicyOf(m)
	if err != nil {
		return false, "MPA spec invalid: " + err.Error()
	}
	if pol.Mode == v1alpha1.UpdateModeOff {
		return false, "update mode Off"
	}
	rec := m.Status.Recommendation
	if rec == nil {
		return false, "no recommendation yet"
	}
	changed := false
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if pol.Container != "" && c.Name != pol.Container {
			continue
		}
		if pol.Container == "" && i > 0 {
			break
		}
		cur := target.ContainerResources(c.Resources)
		if want, ok := autoscaler.Recommended(rec, c.Name, cur); ok {
			want, _ = autoscaler.TargetResources(pol, cur, want, false)
			if autoscaler.Differs(pol, cur, want) {
				c.Resources = autoscaler.WithResources(pol, c.Resources, want)
				changed = true
			}
		}
	}
	if !changed {
		return false, "already at the recommendation"
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[SizedByAnnotation] = m.Name
	return true, fmt.Sprintf("resources set by MultidimPodAutoscaler %s", m.Name)
}

// SizedByAnnotation on a pod names the MPA whose recommendation the webhook
// gave it at creation.
const SizedByAnnotation = v1alpha1.GroupName + "/sized-by"

// owner follows the pod's controller references to the scalable workload:
// a ReplicaSet's Deployment, or a StatefulSet or ReplicaSet itself.
func (h *PodMutator) owner(ctx context.Context, ns string, pod *corev1.Pod) (kind, name string, err error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return "", "", nil
	}
	switch ref.Kind {
	case "ReplicaSet":
		var rs appsv1.ReplicaSet
		if err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &rs); err != nil {
			return "", "", fmt.Errorf("replicaset %s/%s: %w", ns, ref.Name, err)
		}
		if d := metav1.GetControllerOf(&rs); d != nil && d.Kind == "Deployment" {
			return "Deployment", d.Name, nil
		}
		return "ReplicaSet", rs.Name, nil
	case "StatefulSet":
		return "StatefulSet", ref.Name, nil
	}
	return "", "", nil
}

func (h *PodMutator) mpaFor(ctx context.Context, ns, kind, name string) (*v1alpha1.MultidimPodAutoscaler, error) {
	var list v1alpha1.MultidimPodAutoscalerList
	if err := h.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for i := range list.Items {
		ref := list.Items[i].Spec.ScaleTargetRef
		if ref.Kind == kind && ref.Name == name {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}
