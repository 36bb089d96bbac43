// Package twin is the digital twin of the generated applications on a
// cluster whose pods do no work (kwok's fake nodes): it watches the apps'
// Deployments and Pods through client-go informers and, on every
// wall-clock tick, reads each application's allocation from the cluster
// (Running pods, and the "workload" container's limits as applied, from
// the pod status with the spec as fallback), sets it on the calibrated
// simulator (workloads/sim) and advances that application by one
// simulator step, so simulated time runs compressed. It exports what
// cAdvisor, kube-state-metrics and the workload server would report
// for those pods on a Prometheus endpoint: counters grow by the
// simulator's rates times the wall-clock time between ticks, so
// Prometheus's rate() gives the simulated per-second usage, and the
// request-duration histogram is filled so that histogram_quantile
// reproduces the simulated p50, p95 and p99 (Handler serves them all;
// ShardHandler a share of the applications, so that a large twin is
// scraped as several targets, as a cluster is scraped per kubelet).
// Controllers and autoscalers then act on the cluster as if the
// applications ran for real. RunPool is `aware twin`: the twin of the first
// applications of a generated pool (which the caller builds, Pool) on the
// cluster of a kubeconfig.
package twin
