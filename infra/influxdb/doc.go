// Package influxdb runs a private InfluxDB 1.x server (the influxd binary,
// Debian's package in CI) on the loopback interface, for the trajectory
// store's integration tests and for local runs of the controller. Start
// writes an influxd configuration into a directory of the caller's choosing
// (meta, data and WAL under it; HTTP on 127.0.0.1 at a free or fixed port;
// no usage reporting, no UDP/Graphite/collectd/OpenTSDB listeners, no
// _internal monitor database, no query or access logging; warnings only, to
// influxd.log), starts influxd under infra/localproc and waits until GET
// /ping answers 204. Stop shuts it down gracefully and Restart brings it
// back on the same directory and port, so a test can take the database away
// and give it back with its data intact. ErrNoBinary reports a machine
// without influxd.
package influxdb
