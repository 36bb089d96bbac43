// Package cluster runs a Kubernetes control plane on this machine without
// Docker: etcd, kube-apiserver, kube-controller-manager and kube-scheduler
// built from the Go module proxy at pinned versions, and kwok, which turns
// Deployments into Pods that reach Running on fake nodes (and applies in-place
// resizes). Install builds and caches the binaries; Up generates the PKI,
// starts every process on loopback, creates the nodes and writes a
// kubeconfig; Down stops it. The API server keeps an audit log of the users
// the control plane does not run itself (components under test, connected
// with UserKubeconfig): Audit and Forbidden read it, so that a test fails on
// any request a generated ClusterRole does not allow. Pause, Resume, Restart
// and Heal inject faults. It backs `make cluster-up`, the integration tests
// and the local testbed; the code that talks to a cluster takes only a
// kubeconfig, so a kind or cloud cluster works the same.
package cluster
