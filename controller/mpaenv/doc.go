// Package mpaenv is the paper's MPA wrapper: one MultidimPodAutoscaler's
// target on a real cluster as a gym.Env, the interface the simulator
// implements. The environment acts as the MPA's external recommender: a
// step writes the action, bounded as the controller will bound it, to the
// MPA's status.recommendation; waits until the controller has actuated it
// (the target's replicas ready, every pod's applied resources equal to the
// target); waits for one whole step of measurements taken after the
// actuation; observes them through the same Observer as the controller
// (Prometheus); and computes the state and reward with the same functions
// as the controller and the simulator (autoscaler.Evaluate). The controller
// applies an external recommendation only while the MPA's agent may act
// (stage Online or Serving; spec.agent.bootstrap=false starts there), so
// Reset waits for that stage. ClusterEnvs builds one environment per selected
// MPA of a namespace, sharing one Prometheus observer (`aware env serve
// --cluster`).
package mpaenv
