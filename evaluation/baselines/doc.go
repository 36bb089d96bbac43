// Package baselines runs the rule-based autoscalers (a static allocation,
// HPA, VPA and the MPA default HPA+VPA) over a simulated cluster of
// generated applications and tabulates mean reward, CPU and memory
// utilisation, SLO violations, OOM kills, drops and replicas per
// autoscaler. It is the bar the RL agents must clear. TunePool searches
// each app's HPA CPU target on the simulator (Tuning: the search as the
// commands' flags give it; TuneDefault: the default search the studies
// use). RunJob is the main job, `aware run` (a JobConfig: the pool
// generated and tuned, every baseline over every app, results.{json,md}),
// and GeneratePool is `aware generate` (the pool with tuned targets,
// written with its summary and manifests); both report progress through a
// Bar the CLI draws.
package baselines
