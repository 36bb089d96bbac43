package shard

import (
	"slices"
	"time"
)

// Owner returns the member that owns key by rendezvous (highest random
// weight) hashing: every member scores the key and the highest score wins,
// so a member joining or leaving moves only the keys it wins or won, about
// 1/n of them, and every replica with the same members agrees. It returns
// "" when there are no members.
func Owner(key string, members []string) string {
	best, owner := uint64(0), ""
	for _, m := range members {
		w := weight(m, key)
		if owner == "" || w > best || (w == best && m < owner) {
			best, owner = w, m
		}
	}
	return owner
}

// weight hashes member and key together: FNV-1a over both, with a zero
// byte between, then a 64-bit finaliser (splitmix64's) so that members
// whose names differ in one character still score independently.
func weight(member, key string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(member); i++ {
		h = (h ^ uint64(member[i])) * prime
	}
	h *= prime // a zero byte between member and key (h ^ 0 = h)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// Member is what a replica's Lease says of it.
type Member struct {
	// Identity is the Lease's holder (the Lease's name).
	Identity string
	// Acquired is when the replica created its Lease; Renewed when it
	// last renewed it; Duration how long a renewal holds.
	Acquired, Renewed time.Time
	Duration          time.Duration
}

// Timing is the protocol's clock arithmetic, the same for every replica of
// a group.
type Timing struct {
	// Join is how long after creating its Lease a replica starts driving
	// its share (the others count it from Join-Skew, so they let go first).
	// It must exceed the time a Lease takes to be created plus Skew.
	Join time.Duration
	// Skew bounds the difference between the replicas' clocks.
	Skew time.Duration
}

// Counts reports whether the others count m, as listed after round
// began, as a member for that round: it joined at least Join-Skew before,
// and its last renewal had not lapsed by more than Skew when the round
// began.
func (tm Timing) Counts(m Member, round time.Time) bool {
	return !m.Acquired.Add(tm.Join-tm.Skew).After(round) &&
		!m.Renewed.Add(m.Duration+tm.Skew).Before(round)
}

// Drives reports whether a replica drives its share in the round starting
// at round, given self: its Lease as of its last write (creation or
// renewal) that the API server confirmed, by the replica's clock, more
// than Skew before round began. It drives when it counts itself on that
// write as the others count it: every other replica lists the Leases after
// round began, so it sees that write or a later one, counts the replica
// too (Counts is monotonic in the renewal), and with the same members
// rendezvous hashing gives each key one owner: two replicas never drive a
// key in the same round. A replica that stops (killed, or cut off from the
// API server, which also stops its listing) is taken over in the first
// round that starts more than Skew after its last renewal lapsed.
func (tm Timing) Drives(self Member, round time.Time) bool {
	return tm.Counts(self, round)
}

// Members returns the identities the others count for the round, sorted.
func (tm Timing) Members(all []Member, round time.Time) []string {
	var out []string
	for _, m := range all {
		if tm.Counts(m, round) {
			out = append(out, m.Identity)
		}
	}
	slices.Sort(out)
	return out
}
