// Package objstore connects the object segments to a real S3-compatible
// object store. Connect wraps a minio-go client in a Client with the Put, Get
// and Delete operations the segments need (creating the bucket if it is
// missing and streaming objects of unknown size with a bounded part buffer),
// Config holds the endpoint and credentials (ConfigFromEnv reads them from
// AWARE_S3_* variables), and StartLocal runs a private versitygw gateway with
// a POSIX backend on loopback for tests, calibration and local runs.
package objstore
