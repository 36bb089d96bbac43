// Package bootstrap trains an agent before it acts, from what the fallback
// controller did (paper §3.3, Algorithm 1's OFFLINE stage): while HPA and
// VPA drive an application every step is recorded, and the agent learns
// from those records alone. A plain off-policy actor-critic trained this
// way overrates actions the records never tried (extrapolation error), so
// the DDPG route is BCQ, batch-constrained Q-learning (Fujimoto et al.
// 2019): a generative model of the recorded actions keeps the policy near
// them. Offline trains any agent.Agent on a fixed set of transitions and
// reports how far its critic's values are from the returns it then earns.
// An on-policy agent (PPO) cannot learn from another controller's actions;
// its route is a simulator of the application fitted from the metrics the
// records hold (workloads/sim.Fit), in which the agent trains before it
// acts; it lives beside the simulator so that the agent runner, which
// imports this package for BCQ, does not depend on the simulator.
package bootstrap
