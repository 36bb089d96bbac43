// Package extending holds no code: its tests extend AWARE-Go from outside
// its packages, each doing one step of docs/extending.md exactly as a
// researcher would (register a segment and calibrate it, so that it
// appears in generated pools and runs in the simulator and the workload
// server; …), so that the guide cannot drift from what the registries
// accept.
package extending
