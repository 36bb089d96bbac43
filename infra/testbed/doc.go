// Package testbed is the Pulumi program of the AWARE testbed: one
// component resource per concern (MPA, Monitoring, TrajectoryDB,
// ExternalServices, Apps, Load), each registering the typed objects of
// infra/testbed/manifests as Kubernetes resources through the Pulumi
// Kubernetes provider, on a target cluster (the local control plane, any
// cluster by kubeconfig, or kind). Deploy is the program; Program wraps it
// for the Automation API (Driver, what `aware testbed` runs) and the
// program/ directory for `pulumi up` with Pulumi.yaml, so both run the same
// function.
package testbed
