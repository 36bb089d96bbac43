// Package trajectory is the store of the RL agents' experience: the
// controller appends every time step (state, action, reward) of every
// application's agent, the meta learner reads each application's top-M
// trajectories by episode reward, the lifecycle reads the rewards of the
// last N episodes, and offline training reads what the fallback controller
// did over a time range. Store is the interface; three implementations
// share one contract (validation, ordering, tie-breaks): Memory (an
// in-memory store for tests), FileStore (the embedded default: CRC-checked
// append-only log segments on local disk with an in-memory index of
// episodes, crash-tolerant and locked against a second process) and
// InfluxStore (InfluxDB 1.x over its HTTP API, with batched background
// writes, a local journal so that a killed process loses no step, and a
// durable local spool so that nothing is lost while the database is down).
package trajectory
