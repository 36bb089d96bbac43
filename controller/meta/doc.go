// Package meta is AWARE's meta learner (paper §3.2, §4.3; dissertation §5.6.1
// and A.1): a network that turns a bundle of an application's recent
// trajectories, each element X_t = [s_t, a_t, r_t], into a fixed-size
// embedding of the workload that the agents take as extra state, trained
// jointly with them across many applications by back-propagating the base
// learner's loss through the embedding, plus an identification objective
// (InfoNCE over the similarity) that makes bundles of one application
// embed alike, and frozen when it serves. It also holds FLASH's similarity
// between embeddings. It builds on controller/rl
// only and does no I/O.
package meta
