// Package localproc supervises servers that AWARE-Go runs as child processes
// on this machine: the loopback S3 server and PostgreSQL of the workload
// tests and calibration, workload servers started by benchmarks, and (later)
// the local Kubernetes control plane. A Process is started with a death
// signal, so that a crashed parent leaves no server behind, observed by one
// goroutine, and stopped with a signal and a grace period after which it is
// killed. FreePort, Tail and FileTail help start servers and explain why one
// failed.
package localproc
