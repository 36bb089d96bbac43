// Package autoscaler is the MultidimPodAutoscaler controller: once per step
// it observes each MPA's target through the metrics source, produces the
// recommendation (the built-in HPA + VPA recommender, or reads the one an
// external recommender such as the AWARE agent wrote into the status),
// records the step's state, action and reward as a trajectory, advances the
// agent's lifecycle stage, and actuates: replicas through the target's scale
// subresource, resources in place through the pods resize subresource with a
// rolling update of the pod template as the fallback. The decisions are pure
// functions (policy.go, plan.go, lifecycle.go) separate from the I/O of the
// Reconciler (reconciler.go, actuate.go).
package autoscaler
