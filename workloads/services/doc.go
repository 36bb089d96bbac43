// Package services provides the external services that the object and
// database segments need — an S3-compatible object store and PostgreSQL —
// for commands that run real segments on this machine (calibration, the
// demo, the simulator's validation). A Mode says where they come from:
// started on loopback (versitygw and PostgreSQL), reached through the
// environment (AWARE_S3_*, AWARE_DATABASE_URL), or none, in which case the
// segments that need them are skipped. Start connects a segments.Env to
// them and returns the environment with which a child process reaches the
// same services, including the process IDs that calibration meters.
package services
