package lab

import (
	"fmt"
	"time"

	"github.com/aware-autoscaler/aware/evaluation/train"
)

// Curve is a run's figures, episode by episode.
type Curve struct {
	Rewards       []float64 `json:"rewards"`
	SLOViolations []int     `json:"sloViolations"`
	CPUUtil       []float64 `json:"cpuUtil"`
	MemoryUtil    []float64 `json:"memoryUtil"`
}

// Add appends episodes.
func (c *Curve) Add(eps ...train.Episode) {
	for _, e := range eps {
		c.Rewards = append(c.Rewards, e.Reward)
		c.SLOViolations = append(c.SLOViolations, e.SLOViolations)
		c.CPUUtil = append(c.CPUUtil, e.CPUUtil)
		c.MemoryUtil = append(c.MemoryUtil, e.MemoryUtil)
	}
}

// Len is the number of episodes.
func (c Curve) Len() int { return len(c.Rewards) }

// Means are a window of a curve's figures, averaged over its episodes.
type Means struct {
	Reward, SLOViolations, CPUUtil, MemoryUtil float64
}

// Means averages episodes [from, to).
func (c Curve) Means(from, to int) (Means, error) {
	if from < 0 || to > c.Len() || from >= to {
		return Means{}, fmt.Errorf("lab: episodes [%d, %d) of a curve of %d", from, to, c.Len())
	}
	var m Means
	for i := from; i < to; i++ {
		m.Reward += c.Rewards[i]
		m.SLOViolations += float64(c.SLOViolations[i])
		m.CPUUtil += c.CPUUtil[i]
		m.MemoryUtil += c.MemoryUtil[i]
	}
	n := float64(to - from)
	m.Reward, m.SLOViolations, m.CPUUtil, m.MemoryUtil = m.Reward/n, m.SLOViolations/n, m.CPUUtil/n, m.MemoryUtil/n
	return m, nil
}

// Pace is the single-core time of one 100-step simulated episode, measured
// on the 2-core development machine with the quick adaptation study's
// cells (docs/studies.md: TL 16 ms, TL+ 25 ms, AWARE 48 ms, rule-based
// 1 ms per episode, two cells at once) and with aware meta train (115 ms
// of CPU per episode), rounded up: a study's expected wall time is its
// episodes at these paces over its workers.
var Pace = struct {
	// DDPG learning (exploring and updating after every step).
	DDPG time.Duration
	// Meta is an episode of the meta-trained agent adapting: the frozen
	// meta learner's embedding before the episode (one new trajectory
	// through the BiGRU, meta.FLASH) and the agent's wider networks.
	Meta time.Duration
	// MetaTrain is an episode of meta-training: the agent's and, every
	// few episodes, the meta learner's updates, and a whole bundle
	// embedded in training mode before each episode.
	MetaTrain time.Duration
	// Rule is the tuned HPA+VPA (and a greedy policy: no updates).
	Rule time.Duration
	// Tune is one application's HPA target search.
	Tune time.Duration
}{DDPG: 25 * time.Millisecond, Meta: 50 * time.Millisecond, MetaTrain: 120 * time.Millisecond, Rule: 2 * time.Millisecond, Tune: 100 * time.Millisecond}

// Figure is one of Means' figures by name, for tables and ratios.
type Figure struct {
	Name string
	Of   func(Means) float64
}

// The figures of Means, in table order.
var (
	CPUUtil       = Figure{"CPU util", func(m Means) float64 { return m.CPUUtil }}
	MemoryUtil    = Figure{"memory util", func(m Means) float64 { return m.MemoryUtil }}
	SLOViolations = Figure{"SLO violations / episode", func(m Means) float64 { return m.SLOViolations }}
	Reward        = Figure{"reward", func(m Means) float64 { return m.Reward }}
	Figures       = []Figure{CPUUtil, MemoryUtil, SLOViolations, Reward}
)
