// Package scale is the controller's scale benchmark (`aware bench
// controller`): it starts the local control plane with kwok nodes, installs
// the MultidimPodAutoscaler CRD and the controller's ClusterRole, deploys the
// first N generated applications with their MPAs (built-in recommender),
// runs the digital twin scraped by a real Prometheus, and starts `aware
// controller` as its own process with only its ClusterRole's rights. After a
// warm-up in which every MPA gets a recommendation on fresh metrics, it
// watches the MPAs over a few step-aligned rounds and reports how long each
// round took to reach every MPA (from the round boundary to the arrival of
// the last MPA's new recommendation), the controller process's average CPU
// from /proc/<pid>/stat, its sampled and peak RSS from /proc/<pid>/status and
// its error counters from its /metrics, against the targets: one
// replica at most one core on average and 512 MiB, a full round of 1000 MPAs
// within 15 s. Bench is `aware bench controller`: Run, its table, and with
// check an error naming the targets missed.
package scale
