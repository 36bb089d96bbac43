// Package ddpg implements deep deterministic policy gradient (Lillicrap et
// al.) with FIRM's configuration as the defaults: a 40-40 ReLU actor with a
// tanh output, a 40-40 ReLU critic on the concatenated [state, action], Adam
// with learning rates 3e-4 (actor) and 3e-3 (critic), discount 0.99, Polyak
// target updates with τ 3e-3, Gaussian (or Ornstein-Uhlenbeck) exploration
// noise with σ 0.2 scaled by ε decaying from 1 by 1e-6 per exploring step, a
// replay buffer of 1e6 transitions and minibatches of 64. The critic is
// trained on the TD error against targets computed by the target networks;
// the actor follows −∂Q/∂a back-propagated through the critic's input
// gradient. Actions are normalised to [−1, 1]. All randomness comes from the
// injected *rand.Rand, so runs are reproducible bit for bit.
package ddpg
