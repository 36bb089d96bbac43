package meta

import (
	"fmt"
	"slices"
)

// Trajectory is one episode of an application as the meta learner sees it.
type Trajectory struct {
	// Elements holds the episode's elements X_t = [s_t, a_t, r_t], row-major
	// (Steps × features).
	Elements []float64
	// Steps is the number of elements.
	Steps int
	// Reward is the episode's total reward.
	Reward float64
	// Episode is the episode's index in the application's training (0 for
	// the first).
	Episode int
}

// Selection says which trajectories of a buffer make a bundle.
type Selection int

const (
	// TopM takes the M trajectories with the highest episode reward (the
	// paper).
	TopM Selection = iota
	// BestWorst takes the M/2 best and the M/2 worst, leaving out the
	// earliest training episodes (FLASH): the worst show what the
	// application punishes, the best what it rewards.
	BestWorst
)

// String names the selection.
func (s Selection) String() string {
	switch s {
	case TopM:
		return "top-m"
	case BestWorst:
		return "best-worst"
	}
	return fmt.Sprintf("Selection(%d)", int(s))
}

// Buffer keeps an application's recent trajectories: at most Capacity, each
// for TTL environment steps after it ended. The dissertation (Table A.1)
// keeps 32 trajectories and expires them after 300 time steps; with the
// paper's M = 20 that only fills with trajectories of at most 15 steps, so
// the TTL here is in steps and its default (DefaultBuffer) keeps a
// trajectory as long as Capacity episodes last, the table's intent for
// this project's 100-step episodes. It is not safe for concurrent use.
type Buffer struct {
	capacity int
	ttl      int
	now      int // environment steps seen
	items    []buffered
}

type buffered struct {
	Trajectory
	end int // the environment step at which it ended
}

// NewBuffer returns a buffer of capacity trajectories expiring ttl steps
// after they end.
func NewBuffer(capacity, ttl int) (*Buffer, error) {
	if capacity <= 0 || ttl <= 0 {
		return nil, fmt.Errorf("meta: NewBuffer: capacity %d and TTL %d steps must be positive", capacity, ttl)
	}
	return &Buffer{capacity: capacity, ttl: ttl}, nil
}

// DefaultBuffer is the dissertation's 32 trajectories, expiring after 32
// episodes of episodeSteps steps.
func DefaultBuffer(episodeSteps int) (*Buffer, error) {
	return NewBuffer(32, 32*episodeSteps)
}

// Add appends tr, which has just ended, advancing the buffer's clock by its
// steps; it drops expired trajectories and, beyond capacity, the oldest.
func (b *Buffer) Add(tr Trajectory, features int) error {
	if tr.Steps <= 0 || len(tr.Elements) != tr.Steps*features {
		return fmt.Errorf("meta: Buffer.Add: episode %d has %d values for %d steps of %d features", tr.Episode, len(tr.Elements), tr.Steps, features)
	}
	b.now += tr.Steps
	b.items = append(b.items, buffered{Trajectory: tr, end: b.now})
	b.items = slices.DeleteFunc(b.items, func(it buffered) bool { return b.now-it.end > b.ttl })
	if over := len(b.items) - b.capacity; over > 0 {
		b.items = slices.Delete(b.items, 0, over)
	}
	return nil
}

// Len returns the number of trajectories held.
func (b *Buffer) Len() int { return len(b.items) }

// Select returns up to m trajectories by how, most recent first among equal
// rewards; BestWorst skips trajectories of episodes before skipEpisodes.
func (b *Buffer) Select(m int, how Selection, skipEpisodes int) []Trajectory {
	var pool []buffered
	for i := len(b.items) - 1; i >= 0; i-- { // newest first, kept by the stable sort
		if how == BestWorst && b.items[i].Episode < skipEpisodes {
			continue
		}
		pool = append(pool, b.items[i])
	}
	slices.SortStableFunc(pool, func(x, y buffered) int {
		switch {
		case x.Reward > y.Reward:
			return -1
		case x.Reward < y.Reward:
			return 1
		}
		return 0
	})
	var out []Trajectory
	if how == BestWorst && len(pool) > m {
		best := m - m/2
		for _, it := range pool[:best] {
			out = append(out, it.Trajectory)
		}
		for _, it := range pool[len(pool)-m/2:] {
			out = append(out, it.Trajectory)
		}
		return out
	}
	for _, it := range pool[:min(m, len(pool))] {
		out = append(out, it.Trajectory)
	}
	return out
}

// Bundle lays trajs out as the meta learner's input (len(trajs) × steps ×
// features, into dst when it is large enough): each trajectory's last steps
// elements, a shorter one padded with zeros before its first step, so that
// every trajectory ends at the last step, where the forward direction's
// summary is read.
func Bundle(dst []float64, trajs []Trajectory, steps, features int) []float64 {
	n := len(trajs) * steps * features
	dst = grow(dst, n)
	clear(dst)
	for i, tr := range trajs {
		k := min(tr.Steps, steps)
		src := tr.Elements[(tr.Steps-k)*features : tr.Steps*features]
		copy(dst[(i*steps+steps-k)*features:], src)
	}
	return dst
}
