// Package generator builds AWARE's pool of synthetic applications: each App
// is a chain of 1 to MaxSegments calibrated segments sampled with
// replacement, with an SLO derived from the calibrated service times, a load
// (trace shape, offset and mean rate scaled to a drawn CPU demand), a node
// environment (x86 or Power, speed and noise), an initial allocation, a
// train/test split and an agent profile. Generation is deterministic in the
// seed and each app depends only on the seed, its index and the chains of the
// apps before it. The package writes and reads a pool directory (one YAML per
// app and a pool.json index), renders each app's Kubernetes manifests
// (Deployment, Service, ConfigMaps, MultidimPodAutoscaler) from typed objects,
// and summarises a pool (segment mix, chain lengths, resource intensity, SLO
// tightness, environments, trace sources, split). It also gives the pool its
// simulator form (SimApps): each app's chain, node, SLO and initial
// allocation, and its load as a trace shape at the simulation step (LoadShapes:
// per source, the real trace in the traces folder when present, else the
// repository's shipped copy (NASA, Azure LLM), else the synthetic model fitted
// to the trace (Twitter), else a seeded synthetic stand-in), and SimEnvs
// drives chosen applications of the pool as simulated gym environments.
// FirstApps, Simulated, AppIndex and WritePool are the pool's first n apps,
// their simulator form with their shapes, an app's index from its name, and
// the pool written with its summary, as the commands use them.
package generator
