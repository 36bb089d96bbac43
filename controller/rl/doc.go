// Package rl is AWARE-Go's small numeric learning library: dense layers and
// multi-layer perceptrons with hand-written backward passes, SGD and Adam
// optimisers with global-norm clipping, Polyak (soft) target updates and
// running mean/std state normalisation. Every network keeps all of its
// parameters and gradients in one contiguous []float64 (Params), so optimisers,
// target-network updates, copies and checkpoints are single loops. Batches are
// row-major []float64 with one sample per row; workspaces are preallocated per
// batch size so steady-state forward and backward passes do not allocate. The
// package performs no I/O and no logging, and all randomness comes from an
// injected *rand.Rand so results are reproducible bit for bit. It is the base on
// which the DDPG and PPO agents and the meta learner are built.
package rl
