// Package demo is the real workloads end to end on this machine (`aware
// workload demo`): it starts the object store and database (services), runs
// a quick calibration of every segment in child processes and compares its
// CPU figures with the committed profile, then serves an example
// application in this process and replays a short window of a trace against
// it, open loop, printing the load generator's report beside the server's
// own request counters.
package demo
