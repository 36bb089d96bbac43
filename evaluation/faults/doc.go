// Package faults is the controller's fault-injection suite (`aware
// faults`, `make faults`): on the local control plane with the digital
// twin, a real Prometheus and a real InfluxDB, the controller runs as its
// own process over generated MPAs while faults are injected mid-episode
// and reverted one after another (Prometheus stopped, InfluxDB stopped,
// the API server restarted, etcd paused, the controller SIGKILLed three
// times in a row, malformed objects, a burst of MPAs created and deleted
// at once). For each it measures, from the controller's own counters and
// the trajectories InfluxDB holds at the end, the trajectory steps lost,
// the trajectories lost, the time to recover, the wrong actions (steps
// taken in a round whose metrics window fell wholly in a Prometheus
// outage), the controller's requests refused by RBAC (from the API
// server's audit log: its ClusterRole lacks what the code calls) and the
// crashes, and prints one table. RunTo is `aware faults`: Run, the table
// headed by the command line, date and build commit, written into a
// Markdown file's faults section (--doc), and with Check a failed fault an
// error.
package faults
