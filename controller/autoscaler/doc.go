// Package autoscaler is the MultidimPodAutoscaler controller. Once per step
// Reconciler.step runs each MPA's phases in order, each a function in its
// own file: admit the spec (PolicyOf; a new spec builds the MPA's
// recommender, recommend.go), read the target and observe its metrics
// (observe.go; the target's scale and pods through package target), begin
// the agent's lifecycle (stage.go), recommend (recommend.go: the MPA's own
// recommender, the built-in HPA + VPA or one registered with
// RegisterRecommender, or the recommendation an external recommender such
// as the AWARE agent runner wrote into the status), record the step's
// state, action and reward as a trajectory and advance the lifecycle stage
// at the end of an episode (record.go, stage.go), and plan (decide.go).
// Reconcile then writes the status, and the updater actuates the plan
// (updater.go, actuate.go): replicas through the target's scale
// subresource, resources in place through the pods resize subresource with
// a rolling update of the pod template as the fallback. The built-in
// recommender's state is checkpointed (checkpoint.go). The decisions are
// pure functions (policy.go, plan.go, lifecycle.go, evaluate.go) separate
// from the Reconciler's I/O.
package autoscaler
