// Package shard shares the MPAs among controller replicas: each replica
// holds a coordination.k8s.io Lease of its own, renewed a few times per
// lease duration, and at every round lists its group's Leases and keeps
// the MPAs that rendezvous hashing of their UIDs over the live members
// gives it. The decisions (who is a member for a round, who owns a key)
// are pure functions of the Leases and the round's start (Member, Owner),
// made so that two replicas never both own a key in the same round: a
// replica stops driving its share before its Lease can look expired to the
// others, and a joining replica starts only after the others count it.
// Membership is the I/O around them: the Lease, its renewal and the
// per-round listing.
package shard
