// Package manifests is the one source of the testbed's Kubernetes objects:
// typed k8s.io/api objects for each concern (the MPA controller and agent
// runner, monitoring, the trajectory database, the external services the
// segments use, the generated applications and their load generators, the
// Grafana dashboards),
// built from Options by pure functions. The Pulumi program
// (package testbed) registers them as resources and `aware testbed render`
// writes them as YAML, so what Pulumi deploys and what is applied without
// it cannot drift.
package manifests
