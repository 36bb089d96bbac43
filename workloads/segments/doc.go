// Package segments implements the 16 function segments of the AWARE workload
// pool (after Sizeless): compress, decompress, floatOperations, imageCompress,
// imageResize, imageRotate, json2yaml, matMul, readFile, writeFile, sleep,
// objectRead, objectWrite, objectStream, dbRead and dbWrite. Each segment does
// real work on deterministic inputs generated from a seed, is parameterised by
// a payload size, and reports what it did (bytes, items, operations) so that
// callers and tests can check the work rather than only that it returned.
// External services (an S3-compatible object store, a SQL database) are reached
// through the small ObjectStore and Database interfaces owned by this package.
package segments
