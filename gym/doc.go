// Package gym is the Gymnasium-style environment interface of AWARE-Go and
// the maths of the AWARE formulation that every environment shares: the
// metrics an environment reports (what Prometheus would report), the
// normalised state vector, the SLO-preservation ratio and the reward
// (paper §2.2, Table 1), and how an agent's normalised action becomes an
// allocation (Mapping). It is neutral ground: the simulator
// (workloads/sim) and the real-cluster wrapper of the controller both
// implement Env and VecEnv, and the RL agents consume them, without either
// side importing the other.
package gym
