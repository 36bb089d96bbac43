// Package calibration measures what each segment costs on the machine at hand
// — CPU-seconds per request, service-time mean and coefficient of variation,
// memory working set and bytes of I/O — and reads and writes the versioned
// profile file that the simulator is calibrated from. Measurement runs the
// real segments in this process and reads the process's own counters
// (getrusage, /proc/self/io, /proc/self/statm, runtime/metrics), so nothing
// else should run in the process while it measures. The committed profile is
// embedded and returned by Default. Calibrate is a whole calibration of the
// machine (`aware workload calibrate`): each target measured in a fresh child
// process (ChildMeasurer runs the hidden `aware workload calibrate one`, which
// calls MeasureChild), with the external services that the caller provides
// (Services) metered through their process IDs (MeterFromEnv).
package calibration
