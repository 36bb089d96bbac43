// Package testbed is the Pulumi program of the AWARE testbed: one
// component resource per concern (MPA, Monitoring, TrajectoryDB,
// ExternalServices, Apps, Load), each registering the typed objects of
// testbed/manifests as Kubernetes resources through the Pulumi Kubernetes
// provider, on a target cluster. Deploy is the program; Program wraps it
// for the Automation API (Driver, what `aware testbed` runs) and the
// program/ directory for `pulumi up` with Pulumi.yaml, so both run the same
// function. The testbed sits above the rest of the project (it deploys the
// controller, the generator's apps and the workloads' twin); the launchers
// of local processes it uses are in infra/.
//
// A target (local, kubeconfig, kind, gke) is one implementation of the
// target interface (target.go) in a file of its own, target_<name>.go: what
// the configuration needs and turns off for it, the cluster the program
// makes for it, how up starts or finds its cluster and what it loads there,
// what runs beside it, how down tears it down and what status adds. The
// configuration chooses it once; nothing else switches on its name. Adding
// a target (eks) is a file target_eks.go and its entry in the targets table.
package testbed
