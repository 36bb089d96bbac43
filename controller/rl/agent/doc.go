// Package agent defines the interface every reinforcement-learning agent of
// AWARE-Go implements (acting with or without exploration, recording
// transitions, training updates, checkpointing and statistics), the
// Transition and Stats types shared by the agents, the lifecycle, the meta
// learner and the controller, a fixed-capacity ring-buffer Replay with
// allocation-free uniform minibatch sampling from an injected random source,
// and a deterministic Fake agent for tests of the code that drives agents.
// Actions are always normalised to [−1, 1]^ActionDim; mapping them to
// allocations is the caller's business.
package agent
