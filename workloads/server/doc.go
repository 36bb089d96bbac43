// Package server serves one application (a chain of segments) over HTTP, as a
// workload pod does in the cluster: POST or GET /invoke runs the chain once,
// /healthz reports liveness, /readyz reports readiness (true only once the
// application's setup hooks have completed and until shutdown begins), and
// /metrics exposes Prometheus metrics on the server's own registry (request
// duration histogram, received/processed/failed counters, in-flight and queued
// gauges, GOMAXPROCS, Go runtime and process collectors). Config.Concurrency
// bounds the requests running at once; the rest wait in FIFO order. Run
// shuts down gracefully
// when its context is cancelled: readiness turns false, the listener stops
// accepting, in-flight requests drain within a timeout, then the application
// is torn down and external clients are closed. Child runs a server binary as
// a child process (for benchmarks) and waits for its readiness. ServeApp is
// `aware workload serve`: one application from its spec file, with the object
// store and database clients it needs; RequestCounters reads a server's
// request counters.
package server
