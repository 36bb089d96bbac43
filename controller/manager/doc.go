// Package manager wires the MPA controller into one controller-runtime
// manager: the autoscaler reconciler (leader-elected), the admission webhook
// (served by every replica, with a generated certificate and a
// self-maintained MutatingWebhookConfiguration), health probes and the
// Prometheus metrics endpoint. Run is what `aware controller` calls.
package manager
