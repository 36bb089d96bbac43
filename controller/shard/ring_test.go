package shard_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/shard"
)

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("3f2a9c1e-%04d-4b7d-9a0e-%012d", i, i*7919)
	}
	return out
}

func TestOwnerSpreadsAndMovesLittle(t *testing.T) {
	ks := keys(3000)
	three := []string{"aware-a", "aware-b", "aware-c"}
	owners := map[string]string{}
	count := map[string]int{}
	for _, k := range ks {
		o := shard.Owner(k, three)
		owners[k] = o
		count[o]++
		assert.Equal(t, o, shard.Owner(k, []string{"aware-c", "aware-a", "aware-b"}), "order of members matters")
	}
	for _, m := range three {
		assert.InDelta(t, 1000, count[m], 100, "member %s owns %d of 3000", m, count[m])
	}
	// One leaves: only its keys move, spread over the others.
	moved := map[string]int{}
	for _, k := range ks {
		o := shard.Owner(k, []string{"aware-a", "aware-c"})
		if owners[k] != "aware-b" {
			require.Equal(t, owners[k], o, "key %s moved though its owner stayed", k)
		} else {
			moved[o]++
		}
	}
	assert.InDelta(t, count["aware-b"]/2, moved["aware-a"], 100)
	// One joins: only keys it wins move, about a quarter.
	joined := 0
	for _, k := range ks {
		o := shard.Owner(k, append(slices.Clone(three), "aware-d"))
		if o != owners[k] {
			require.Equal(t, "aware-d", o)
			joined++
		}
	}
	assert.InDelta(t, 750, joined, 100)
	assert.Empty(t, shard.Owner("k", nil))
}

// replica is one simulated replica: its clock offset and its Lease's
// writes as the API server holds them (visible from done, real time).
type replica struct {
	id       string
	offset   time.Duration // local = real + offset
	acquired time.Time     // local
	writes   []simWrite
	killed   time.Time // real; zero: alive
}

type simWrite struct {
	renewed   time.Time // the value written (local clock)
	done      time.Time // real time the API server applied it
	localDone time.Time // when the replica learnt it (local)
}

// visible is the replica's Lease as a listing at real time at sees it.
func (r *replica) visible(at time.Time) (shard.Member, bool) {
	m := shard.Member{Identity: r.id, Acquired: r.acquired, Duration: simLease}
	for _, w := range r.writes {
		if !w.done.After(at) {
			m.Renewed = w.renewed
		}
	}
	return m, !m.Renewed.IsZero()
}

// self is the replica's own view for a round, as Membership.self builds
// it.
func (r *replica) self(round time.Time, tm shard.Timing) shard.Member {
	m := shard.Member{Identity: r.id, Acquired: r.acquired, Duration: simLease}
	for _, w := range r.writes {
		if w.localDone.Before(round.Add(-tm.Skew)) {
			m.Renewed = w.renewed
		}
	}
	if m.Renewed.IsZero() {
		m.Acquired = round.Add(time.Hour)
	}
	return m
}

const (
	simStep  = 3 * time.Second
	simLease = time.Second
	simRenew = 250 * time.Millisecond
)

// TestTimingNeverDrivesAKeyTwice simulates groups of replicas (3-second
// rounds, 1-second Leases renewed every 250 ms, clocks up to 250 ms apart)
// with slow and failing Lease writes, rounds that take up to a second,
// replicas joining, dying and being replaced, and checks every round: no
// key has two drivers; and, where writes are prompt, no key misses more
// than one round (a dead replica's included: the lease plus the skew plus
// a round's duration fit in a step), and every key has a driver once the
// membership is settled.
func TestTimingNeverDrivesAKeyTwice(t *testing.T) {
	tm := shard.Timing{Join: simLease, Skew: 250 * time.Millisecond}
	ks := keys(60)
	for seed := range uint64(40) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			prompt := seed%2 == 0 // writes confirmed within 200 ms, none failing
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			end := t0.Add(40 * simStep)
			var reps []*replica
			start := func(at time.Time, name string) {
				r := &replica{id: name, offset: time.Duration(rng.Int64N(int64(tm.Skew))) - tm.Skew/2}
				r.acquired = at.Add(r.offset).Truncate(time.Microsecond)
				// Unless writes are prompt, one stretch of 4 s where the
				// replica's writes take 2 to 5 s (an API server
				// struggling).
				stall := at.Add(time.Duration(rng.Int64N(int64(30 * simStep))))
				for w := at; w.Before(end); w = w.Add(simRenew) {
					lat := time.Duration(rng.Int64N(int64(200 * time.Millisecond)))
					if !prompt {
						lat = time.Duration(rng.ExpFloat64() * float64(400*time.Millisecond))
						if !w.Before(stall) && w.Before(stall.Add(4*time.Second)) {
							lat = 2*time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))
						}
						if rng.IntN(10) == 0 {
							continue // failed
						}
					}
					r.writes = append(r.writes, simWrite{renewed: w.Add(r.offset).Truncate(time.Microsecond), done: w.Add(lat), localDone: w.Add(lat).Add(r.offset)})
				}
				reps = append(reps, r)
			}
			for i := range 3 {
				start(t0.Add(time.Duration(rng.Int64N(int64(2*time.Second)))), "r"+strconv.Itoa(i))
			}
			victim := reps[rng.IntN(3)]
			kill := t0.Add(15*simStep + time.Duration(rng.Int64N(int64(simStep))))
			victim.killed = kill
			victim.writes = slices.DeleteFunc(victim.writes, func(w simWrite) bool { return w.done.After(kill) })
			start(t0.Add(28*simStep+time.Duration(rng.Int64N(int64(simStep)))), "r3") // a replacement joins

			lastDriven := map[string]time.Time{}
			for round := t0.Add(simStep); round.Before(end.Add(-simStep)); round = round.Add(simStep) {
				drivers := map[string][]string{}
				for _, r := range reps {
					// The replica starts the round when its clock reaches
					// it and lists when its first MPA's step begins; the
					// rest of the round takes up to a second, standing in
					// for the listing of the MPA stepped last.
					listAt := round.Add(-r.offset).Add(time.Duration(rng.Int64N(int64(time.Second))))
					if !r.killed.IsZero() && !listAt.Before(r.killed) {
						continue
					}
					if r.acquired.After(listAt.Add(r.offset)) {
						continue // not started yet
					}
					var all []shard.Member
					for _, o := range reps {
						if m, ok := o.visible(listAt); ok {
							all = append(all, m)
						}
					}
					members := tm.Members(all, round)
					if !tm.Drives(r.self(round, tm), round) {
						continue
					}
					for _, k := range ks {
						if shard.Owner(k, members) == r.id {
							drivers[k] = append(drivers[k], r.id)
						}
					}
				}
				settled := round.After(t0.Add(4*simStep)) && (round.Before(kill.Add(-simStep)) || round.After(kill.Add(2*simStep)))
				settled = settled && !(round.After(t0.Add(28*simStep)) && round.Before(t0.Add(31*simStep)))
				for _, k := range ks {
					require.LessOrEqual(t, len(drivers[k]), 1, "round %s: key %s driven by %v", round.Sub(t0), k, drivers[k])
					if len(drivers[k]) == 1 {
						if last, ok := lastDriven[k]; ok && prompt {
							require.LessOrEqual(t, round.Sub(last), 2*simStep, "key %s missed %s (rounds %s to %s, kill at %s)",
								k, round.Sub(last)-simStep, last.Sub(t0), round.Sub(t0), kill.Sub(t0))
						}
						lastDriven[k] = round
					} else if prompt && settled {
						t.Fatalf("round %s: key %s has no driver", round.Sub(t0), k)
					}
				}
			}
		})
	}
}
