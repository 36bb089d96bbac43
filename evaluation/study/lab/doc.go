// Package lab is the world the studies run in: the generated pool with its
// splits, each application on the calibrated simulator over the real traces
// (or their synthetic stand-ins, or one trace file the user gives), its
// tuned rule-based autoscaler (HPA+VPA with the highest CPU target that
// meets the SLO, VPA auto), and the agents the studies train: DDPG from
// scratch, the meta-trained agent with its frozen meta learner, and the
// transfer-learning variants (TL, TL+). Policies that several cells start
// from (a converged policy per application, TL's source policy, the meta
// checkpoint) are trained once, on demand, and kept as checkpoints beside
// the study's store, so that a resumed or sharded study reuses them and a
// shard computes only those its cells need; a meta-trained agent may
// instead come from a folder of `aware meta train` (MetaFrom).
package lab
