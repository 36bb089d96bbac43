// Package sim is the calibrated cluster simulator: a discrete-time model of
// many applications, each a chain of segments served by replicas with
// per-pod CPU and memory limits, driven by a load trace. Per-request CPU
// demand, service-time quantiles, memory and I/O come from the calibration
// profile (workloads/calibration), scaled by payload size and node speed.
// Each step it models CPU-quota throttling, processor-sharing queueing on
// fractional cores (Erlang C), backlog and timeouts under overload, the
// working set growing with concurrency and OOM kills with restart
// back-off, cold starts of new replicas, in-place or restarting vertical
// changes and measurement noise, and it reports what Prometheus would
// report plus the AWARE state and reward. Cluster steps all applications
// in one call and implements gym.VecEnv; AppEnv is one application as a
// gym.Env. The simulator never imports the controller; `aware sim
// validate` measures its error against the real workload server.
package sim
