// Package pool turns a generated application pool (generator) into
// simulator applications (workloads/sim): each app's chain, node speed,
// noise, SLO and initial allocation, and its load as a shared trace shape
// at the simulation step, entered at the app's offset and scaled to its
// mean rate. Shapes come from the real traces when their folder is present
// and from seeded synthetic stand-ins otherwise, so every study runs on a
// fresh clone.
package pool
