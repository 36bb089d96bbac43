// Package shipped holds what the repository carries of the project's
// development load traces, so that a fresh clone, and the aware binary
// wherever it runs, drives its studies on real load: the two traces whose
// licences allow it, embedded byte for byte (NASA's 1995 HTTP trace, public
// domain, and the Azure LLM 2023 code trace, CC-BY-4.0; provenance, licence
// and attribution in README.md beside them), read by Load; and, for the
// Twitter trace, whose source states no licence, the project's synthetic
// load model fitted to it (Fitted), to sample in its place.
// generator.LoadShapes falls back on them when the traces folder lacks a
// file.
package shipped
