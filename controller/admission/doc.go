// Package admission is the MPA's admission webhook: when a pod is created,
// it finds the workload that owns it and the MultidimPodAutoscaler that
// scales that workload, and sets the container's resources to the
// recommendation in force (bounded by the MPA's resource policy), so that new
// pods start at the size the running ones were resized to. It also makes the
// webhook's serving certificate and keeps the MutatingWebhookConfiguration's
// CA bundle current. Whether pod creation fails when the webhook is down is
// the configuration's failure policy: Ignore (fail open, the default) or Fail.
package admission
