// Package toolchain builds the Pulumi CLI and the Pulumi Kubernetes
// provider plugin from the Go module proxy into a versioned cache, and
// prepares a Pulumi home directory with the plugin installed, so that the
// testbed's Automation API runs on machines that reach nothing but the
// module proxy (no get.pulumi.com, no plugin downloads). Ensure builds them
// on the testbed's first use, after a line saying what and how long;
// Cached only finds them (tests skip without them).
package toolchain
