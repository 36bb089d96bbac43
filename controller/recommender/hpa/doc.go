// Package hpa is the upstream Kubernetes HorizontalPodAutoscaler algorithm
// (kubernetes/kubernetes pkg/controller/podautoscaler: replica_calculator.go
// and horizontal.go) for the CPU-utilisation metric, as a pure step-driven
// Recommender: desired = ceil(ready × utilisation / target) outside the
// tolerance band, with upstream readiness handling, scale-up and scale-down
// stabilisation windows, rate-limiting policies (pods or percent per period,
// selectPolicy Max/Min/Disabled) and min/max replicas. Time advances by the
// configured step on every call; windows and periods count the earlier
// calls that lie strictly within them, as upstream counts events newer than
// now minus the period. It only changes replicas.
package hpa
