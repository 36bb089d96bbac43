// Package image builds the project's container image without a container
// engine: the aware binary (controller, agent runner, workload server and
// load generator in one) built static for Linux, on an empty base with a
// non-root user, /tmp and the host's CA bundle, assembled with
// go-containerregistry. The image is reproducible (fixed timestamps, sorted
// entries: the same binary gives the same digest), and is either written as
// a docker-save tarball, which `docker load` and kind's image loading take,
// or pushed to a registry and referred to by digest.
package image
