// Package speed measures the RL library's hot paths with testing.Benchmark
// and lays them out against the targets and FIRM's published figures
// (73 ms per DDPG training update and 1.2 ms per inference, in Python): DDPG
// update on a minibatch of 64 and single-state inference with FIRM's 40-40
// networks, the PPO update of a 100-step rollout, and the meta learner's
// bidirectional GRU (2 layers × 256 units) forward and forward+backward over
// 20 trajectories × 100 steps. Bench, `aware bench rl`, prints the table.
package speed
