// Package local runs the parts of a local-target testbed that cannot run as
// pods on the local control plane (whose kwok nodes run no containers):
// the digital twin playing the apps, Prometheus scraping it, InfluxDB, the
// MPA controller and the agent runner, as one supervisor process (Run)
// whose children stop with it. The controller and the runner authenticate
// as the service accounts the testbed's RBAC binds, so they have exactly
// the rights they would have in the cluster. Start launches the supervisor
// detached and waits for its endpoints; Stop ends it.
package local
