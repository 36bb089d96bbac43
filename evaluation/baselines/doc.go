// Package baselines runs the rule-based autoscalers (a static allocation,
// HPA, VPA and the MPA default HPA+VPA) over a simulated cluster of
// generated applications and tabulates mean reward, CPU and memory
// utilisation, SLO violations, OOM kills, drops and replicas per
// autoscaler. It is the main job of `aware run` and the bar the RL agents
// must clear.
package baselines
