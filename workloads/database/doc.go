// Package database connects the db segments to a real PostgreSQL server.
// Connect opens a pgx connection pool wrapped in a DB with the Exec, Query
// and CopyRows operations the segments need (URLFromEnv reads the URL from
// AWARE_DATABASE_URL), and StartLocal runs a private PostgreSQL cluster on
// loopback (initdb, trust authentication, a database named "aware") for
// tests, calibration and local runs.
package database
