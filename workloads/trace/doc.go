// Package trace loads, transforms, describes and synthesises request-arrival
// load traces. A trace is a Series: request counts in consecutive steps of
// equal length. Loaders read the project's per-second count files and the
// Azure Functions 2019/2021 and Azure LLM inference traces (gzip-transparent,
// streaming, with errors naming file, line and field); pure operations
// resample, normalise, scale, window and reorder series (the "load high ↔ low"
// scenario); Describe summarises a series at several time scales; Fit and
// Generate estimate a seeded synthetic model (diurnal and weekly cycles,
// multiplicative AR(1) noise, decaying bursts, Poisson counts) that reproduces
// a real trace's statistics; and Arrivals turns a series into request arrival
// offsets for the load generator. WriteStats and WriteFit are the `aware
// trace` commands' reports.
package trace
