package admission

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConfigName is the MutatingWebhookConfiguration the controller keeps.
const ConfigName = "aware-mpa-pod-resources"

// Endpoint says how the API server reaches the webhook: a URL (a
// controller outside the cluster, e.g. the local control plane) or a
// Service (in the cluster).
type Endpoint struct {
	URL              string
	ServiceNamespace string
	ServiceName      string
	ServicePort      int32
}

// EnsureConfiguration creates or updates the MutatingWebhookConfiguration
// for pods CREATE with the given CA bundle and failure policy (Ignore:
// pods are admitted unchanged when the webhook is down; Fail: they are
// refused). Namespaces labelled aware.dev/webhook=disabled and kube-system
// are skipped.
func EnsureConfiguration(ctx context.Context, c client.Client, ep Endpoint, caBundle []byte, policy admissionregistrationv1.FailurePolicyType) error {
	switch policy {
	case admissionregistrationv1.Ignore, admissionregistrationv1.Fail:
	default:
		return fmt.Errorf("webhook failure policy %q: must be Ignore or Fail", policy)
	}
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: caBundle}
	switch {
	case ep.URL != "":
		u := ep.URL + Path
		cc.URL = &u
	case ep.ServiceName != "":
		p := Path
		port := ep.ServicePort
		if port == 0 {
			port = 443
		}
		cc.Service = &admissionregistrationv1.ServiceReference{Namespace: ep.ServiceNamespace, Name: ep.ServiceName, Path: &p, Port: &port}
	default:
		return fmt.Errorf("webhook endpoint: a URL or a service is required")
	}
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	reinvoke := admissionregistrationv1.IfNeededReinvocationPolicy
	want := admissionregistrationv1.MutatingWebhook{
		Name:                    "pods.autoscaling.aware.dev",
		ClientConfig:            cc,
		FailurePolicy:           &policy,
		SideEffects:             &none,
		TimeoutSeconds:          &timeout,
		ReinvocationPolicy:      &reinvoke,
		AdmissionReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem}},
			{Key: "aware.dev/webhook", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}},
		}},
	}
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	err := c.Get(ctx, client.ObjectKey{Name: ConfigName}, &cfg)
	if apierrors.IsNotFound(err) {
		cfg = admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigName, Labels: map[string]string{"app.kubernetes.io/part-of": "aware"}},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{want},
		}
		if err := c.Create(ctx, &cfg); err != nil {
			return fmt.Errorf("create MutatingWebhookConfiguration %s: %w", ConfigName, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("MutatingWebhookConfiguration %s: %w", ConfigName, err)
	}
	cfg.Webhooks = []admissionregistrationv1.MutatingWebhook{want}
	if err := c.Update(ctx, &cfg); err != nil {
		return fmt.Errorf("update MutatingWebhookConfiguration %s: %w", ConfigName, err)
	}
	return nil
}
