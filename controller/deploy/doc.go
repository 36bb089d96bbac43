// Package deploy installs what the controller and the environment need in
// a cluster from the manifests built into the binary: the MPA CRD
// (controller/api/crd) and the ClusterRoles that controller-gen generates
// from the +kubebuilder:rbac markers into rbac/ (the controller),
// env-rbac/ (`aware env serve --cluster`) and agents-rbac/ (`aware agents`,
// the agent runner). Tests and the scale benchmark
// use it to run each part with exactly its generated rights.
package deploy
