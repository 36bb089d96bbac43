// Package rl is AWARE-Go's small numeric learning library: dense layers and
// multi-layer perceptrons, GRUs and multi-layer bidirectional GRUs over time
// (backpropagation through time) and dropout, all with hand-written backward
// passes checked against finite differences, and row concatenation (a state
// with an action or an embedding) with its backward split; SGD and Adam optimisers with
// global-norm clipping, Polyak (soft) target updates, running mean/std state
// normalisation, and versioned, checksummed, atomically written checkpoints. Every network keeps all of its
// parameters and gradients in one contiguous []float64 (Params), so optimisers,
// target-network updates, copies and checkpoints are single loops. Batches are
// row-major []float64 with one sample per row; workspaces are preallocated per
// batch size so steady-state forward and backward passes do not allocate.
// Larger matrix products and the gate non-linearities run on AVX-512
// kernels in Go assembly where the processor has them (gemm.go), and on
// gonum's Dgemm and scalar loops elsewhere or under the purego build tag. The
// package does no I/O besides checkpoint files and no logging; all randomness comes from an
// injected *rand.Rand so results are reproducible bit for bit. It is the base on
// which the agents (package agent and below) and the meta learner are built.
package rl
