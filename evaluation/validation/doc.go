// Package validation measures how faithful the simulator is: it runs
// applications for real (the workload server as a CPU-limited child
// process, the load generator replaying a window of a real trace on
// loopback), simulates the same application, allocation and per-second
// load with workloads/sim, and tabulates measured against simulated CPU
// usage, throughput and p95 latency with median absolute percentage errors.
// The comparison maths (Simulate, Compare) is pure; Real does the I/O.
// Run is `aware sim validate` (a Config: which applications, CPU limits
// and loads, how the real side runs, the --simulate-only and --replay
// modes, and validation.{md,json} with the profile simulated with).
package validation
