// Package telemetry is the controller's view of Prometheus: it turns the
// metrics that cAdvisor, kube-state-metrics and the AWARE workload server
// expose (and that the digital twin mimics) into the per-step quantities of
// gym.Metrics that the RL state is built from (limits, CPU, memory, I/O and
// network usage, request rates, latency quantiles, OOM kills). Source takes
// one Snapshot of every pod per control round with a fixed number of
// PromQL queries (13, each grouped by namespace and pod, run concurrently
// through client_golang's api.Client, decoded in one pass keeping only the
// labels used, and timed per query), so the query count is the same for 3
// pods or 3000;
// Snapshot.Aggregate then combines the pods of one application into an
// Observation, summing usage and request rates, averaging limits, and
// summing the per-pod latency histogram buckets before taking quantiles the
// way histogram_quantile does. Missing, NaN and stale data are never
// zeros: they are *DataError values matching ErrNoData or ErrStale that
// name the metric or exporter and the pods, on which the controller holds
// its decision. Observe and DeploymentPodRegex serve single-application
// use; Snapshotter is the interface the controller consumes and Fake its
// scripted stand-in.
package telemetry
