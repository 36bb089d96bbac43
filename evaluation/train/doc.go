// Package train runs an RL agent (controller/rl/agent) against a Gym
// environment (gym.Env, such as one simulated application) for a number of
// 100-step episodes: it maps the agent's normalised actions onto the
// environment's action space (continuous agents) or applies the artifact's
// seven discrete moves to the current allocation (discrete agents, with a
// penalty for refused moves), feeds transitions back, updates the agent
// every step, and records per-episode reward, utilisation and SLO
// violations. TrainApp is `aware train` (one agent on one pool application,
// scored against its tuned HPA+VPA, with its curve and checkpoint), and
// ComparePool is `aware compare` (every algorithm on the first test-split
// applications, Compare, and the Report); both report progress through a
// Bar the CLI draws.
package train
