// Package gobuild builds pinned Go programs from the module proxy into a
// versioned cache: a wrapper module per program and version, built into a
// temporary directory and renamed into place when complete, so that an
// interrupted build leaves nothing that looks finished. The local control
// plane (infra/cluster) and the Pulumi toolchain (testbed/toolchain)
// are built this way on machines that can reach only the module proxy.
package gobuild
