// Package recommender holds what every autoscaling recommender of a
// MultidimPodAutoscaler shares: the Allocation it sets (replicas, CPU and
// memory per pod), the Bounds it must respect (the MPA's minReplicas,
// maxReplicas and resourcePolicy min/maxAllowed), the per-step Observation it
// is fed (what Prometheus would report for one workload), and the Recommender
// interface implemented by the rule-based recommenders (subpackages hpa, vpa
// and mpa, the controller's default HPA + VPA). The simulator chooses one by
// name with baselines.Register and the live controller with
// autoscaler.RegisterRecommender. The RL agent does not implement
// Recommender: it is an agent.Agent (controller/rl/agent) acting on the gym
// state, and in a cluster the agent runner (controller/agents) hosts one per
// MPA that names it and acts as that MPA's external recommender, writing
// status.recommendation through mpaenv. Fake is a scripted Recommender for
// tests.
package recommender
