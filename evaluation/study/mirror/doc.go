// Package mirror keeps a study run's output folder in an S3-compatible
// object store, so that a shard's results outlive the machine or pod that
// computed them, and puts the shards back together for `aware study merge`.
//
// A run mirrored to s3://BUCKET/PREFIX keeps its --out folder under
// PREFIX/shard-I-of-N/ (shard-1-of-1 when unsharded). Start pulls what that
// folder already holds (a retried pod resumes where the last one stopped),
// then pushes every new or changed file at an interval and once more at
// Stop. Fetch downloads one study's folder of every shard under a prefix,
// refusing a prefix where a shard is missing or shards of different counts
// meet. The store is the small Store interface; objstore.Client has it and
// MemStore is the fake beside it.
package mirror
