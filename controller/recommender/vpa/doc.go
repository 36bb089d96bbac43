// Package vpa is the upstream Kubernetes VerticalPodAutoscaler
// (kubernetes/autoscaler vertical-pod-autoscaler: recommender
// logic/model/util and the updater's eviction rule) as a pure step-driven
// Recommender. Per-pod CPU usage goes into a decaying histogram weighted by
// the CPU request, per-interval memory peaks (bumped after OOM kills) into
// another; the target, lower and upper bounds are percentiles plus a safety
// margin, the bounds widened by a confidence multiplier from the history
// length, raised to per-pod minimums and capped by the MPA bounds. Like the
// updater, Recommend moves CPU and memory to the target only when the
// request is outside [lowerBound, upperBound], after a quick OOM, or when the
// pods are 12 h old and the change is at least 10 %; replicas are untouched.
// Every pod of a workload is taken as alike: one CPU sample per ready pod per
// step and one memory peak per pod per aggregation interval; the confidence
// counts samples at upstream's one per pod per minute. Samples are taken at
// every step and the recommendation recomputed once per recommender interval
// (1 min, as upstream's --recommender-interval). Time advances by the
// configured step on every call.
package vpa
