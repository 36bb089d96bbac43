// Package agents is the AWARE recommender: it hosts one reinforcement-
// learning agent per MultidimPodAutoscaler that names it in
// spec.recommenders and acts as that MPA's external recommender through
// status.recommendation, while the controller keeps actuation, the
// trajectory records and the lifecycle stage (Algorithm 1). What each stage
// means for the agent is decided here: OFFLINE trains it from the
// controller's records of the HPA+VPA fallback alone (batch-constrained
// when the MPA bootstraps); ONLINE acts with exploration and trains; SERVING
// acts with the frozen policy; SERVING → ONLINE resumes training from the
// serving weights. Each agent acts through mpaenv (write the action, wait
// for its actuation, observe the next whole step through Prometheus),
// trains in a bounded pool of training slots, and is checkpointed with its
// optimiser state after every episode and stage change, so that a runner
// killed in any stage resumes the same weights. An agent that cannot act
// (its checkpoint is unreadable, its initial policy cannot be used, its
// action or reward is not a number)
// withholds its recommendation for the step, and the controller acts on
// HPA+VPA instead and names the cause in the MPA's conditions.
package agents
