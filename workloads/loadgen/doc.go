// Package loadgen is an open-loop, trace-replaying HTTP load generator. It
// takes a Schedule of request arrival offsets (built from a trace by the
// caller) and sends each request at its intended time whether or not earlier
// requests have completed, so a slow server cannot slow the offered load
// (no coordinated omission): latency is measured from the intended send time,
// so queueing in the generator counts. One dispatcher goroutine sleeps until
// the next due arrival and fires every due request; requests beyond a cap on
// outstanding requests are dropped and counted rather than delayed. The Report
// gives counts, errors by kind, achieved versus target rate, latency and
// dispatch-lateness percentiles from a log-linear histogram (under 0.4 %
// relative error, constant memory), as an aligned table or JSON; optional
// Prometheus metrics expose the same counters live. Bench replays flat load at
// a list of rates and tabulates whether each was held. BuildSchedule turns a
// trace file or a pseudo trace (synthetic, constant, poisson) into a
// Schedule; Replay is `aware loadgen` and BenchLocal `aware loadgen bench`,
// which runs Bench against this binary's workload server started as a child
// process.
package loadgen
