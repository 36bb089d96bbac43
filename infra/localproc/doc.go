// Package localproc starts and supervises the servers AWARE-Go runs as child
// processes on this machine: the loopback S3 gateway and PostgreSQL of the
// workload tests and calibration, workload servers started by benchmarks,
// and the local Kubernetes control plane (etcd, kube-apiserver, …). Start
// runs a binary with its arguments, environment, working directory and
// credentials, sends its output to a log file or a bounded in-memory Tail,
// and arranges a parent-death signal so that a crashed parent leaves no
// server behind; one goroutine observes the exit (Done, Exited, Err).
// WaitReady polls a caller's Probe until the server answers, exits or runs
// out of time, quoting the end of its output on failure, and Stop sends a
// signal and kills the process if it outlives a grace period. FreePort,
// FreeLoopbackAddr, Tail and FileTail are the small helpers around that.
package localproc
