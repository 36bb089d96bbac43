// Package recommender holds what every autoscaling recommender of a
// MultidimPodAutoscaler shares: the Allocation it sets (replicas, CPU and
// memory per pod), the Bounds it must respect (the MPA's minReplicas,
// maxReplicas and resourcePolicy min/maxAllowed), the per-step Observation it
// is fed (what Prometheus would report for one workload), and the Recommender
// interface implemented by the rule-based baselines (subpackages hpa, vpa and
// mpa) and by the RL agent. Fake is a scripted Recommender for tests.
package recommender
