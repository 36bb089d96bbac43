// Package ppo implements proximal policy optimisation (Schulman et al.) with
// the AWARE artifact's configuration as the defaults: separate 64-64 tanh
// actor and critic networks, Adam with learning rate 3e-4, discount 0.99,
// GAE(λ 0.95), 5 epochs of minibatches of 64 over an on-policy rollout of 100
// steps (one AWARE episode), clipped surrogate with ε 0.2, entropy bonus 0.01,
// value-loss coefficient 0.5, per-network gradient-norm clipping at 0.5 and
// per-minibatch advantage normalisation. A discrete head (categorical over N
// actions, e.g. the artifact's 7 gym.Move values) encodes its action as a
// one-hot vector of length N; a continuous head samples a diagonal Gaussian
// with a learnt state-independent log-std and clips the sample to [−1, 1]
// (the log-probability is that of the unclipped sample, kept inside the
// agent between Act and Observe). All randomness comes from the injected
// *rand.Rand, so runs are reproducible bit for bit.
package ppo
