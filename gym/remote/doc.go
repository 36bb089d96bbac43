// Package remote serves gym.Env environments over HTTP/JSON so that agents
// in other languages (mostly Python) can drive the simulator or the real
// cluster, and provides a Go client that is itself a gym.Env. The API is
// versioned under /v1: GET /v1/envs lists the environments, GET
// /v1/envs/{name}/spaces describes their observation and action spaces, and
// POST /v1/envs/{name}/reset and /step drive them; GET /healthz answers
// without authentication. Every other call needs "Authorization: Bearer
// <token>" (compared in constant time). Calls to one environment are
// serialised, different environments run concurrently, and the request's
// context reaches Reset and Step. Errors are JSON {"error": "..."} naming
// what is wrong and where, with the matching status code. Floats are JSON
// numbers in Go's shortest round-trip form, so values cross the wire
// bit-identically; NaN and ±Inf, which JSON cannot carry, travel as the
// strings "NaN", "Infinity" and "-Infinity" (the protobuf JSON convention)
// and are refused in actions. The standard-library Python client lives in
// python/aware_env.py. ListenAndServe is `aware env serve`: it checks the
// token (or that an insecure server listens on loopback), builds the
// environments through an EnvFactory and serves them, with optional
// Prometheus metrics.
package remote
