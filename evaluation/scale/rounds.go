package scale

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// Round is one measured round of recommendations.
type Round struct {
	// Start is the round's boundary T, a multiple of the step in wall-clock
	// time: the controller begins every MPA's step at T.
	Start time.Time
	// Arrived is how many MPAs showed a recommendation of this round
	// (status.recommendation.time ≥ T) within the deadline, of Want.
	Arrived, Want int
	// Complete is Arrived == Want.
	Complete bool
	// Deferred counts the arrived MPAs whose first recommendation at or
	// after T came from a later round's step (time ≥ T + step): their step
	// of this round wrote none (it held on missing metrics or failed) or
	// never ran.
	Deferred int
	// Changed counts the arrived MPAs whose status changed in more than
	// the recommendation's time and the agent's per-step counters: the
	// writes a controller writing status only on change would still make.
	Changed int
	// Duration is from T to the arrival of the last MPA's recommendation
	// (of those that arrived); P50 and P95 are the per-MPA latencies' quantiles.
	Duration, P50, P95 time.Duration
}

// arrival is when the benchmark first saw an MPA carry a recommendation
// whose time is rec; changed says whether its status then differed from
// the previous arrival's in more than time and counters (see
// statusFingerprint).
type arrival struct {
	rec, at time.Time
	changed bool
}

// tracker records, per MPA, the local arrival time of each new
// recommendation time seen in its status. It is safe for concurrent use.
type tracker struct {
	mu   sync.Mutex
	seen map[string][]arrival // in arrival order, one per new rec time
	last map[string]string    // the fingerprint of the last arrival
}

func newTracker() *tracker { return &tracker{seen: map[string][]arrival{}, last: map[string]string{}} }

// observe notes that the MPA key showed a recommendation of time rec at
// time at, with a status of fingerprint fp; only the first sighting of a
// newer recommendation counts.
func (t *tracker) observe(key string, rec, at time.Time, fp string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.seen[key]
	if n := len(s); n > 0 && !rec.After(s[n-1].rec) {
		return
	}
	prev, ok := t.last[key]
	t.last[key] = fp
	t.seen[key] = append(s, arrival{rec: rec, at: at, changed: !ok || prev != fp})
}

// round is the round of boundary T (of a step of step) over the MPAs
// keys: for each, the first arrival of a recommendation of time ≥ T.
// Recommendations that arrive after deadline (zero: none) are not
// counted.
func (t *tracker) round(T, deadline time.Time, step time.Duration, keys []string) Round {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := Round{Start: T, Want: len(keys)}
	next := T.Add(step)
	lat := make([]time.Duration, 0, len(keys))
	for _, k := range keys {
		for _, a := range t.seen[k] {
			if a.rec.Before(T) {
				continue
			}
			if !deadline.IsZero() && a.at.After(deadline) {
				break
			}
			lat = append(lat, max(a.at.Sub(T), 0))
			if !a.rec.Before(next) {
				r.Deferred++
			}
			if a.changed {
				r.Changed++
			}
			break
		}
	}
	r.Arrived = len(lat)
	r.Complete = r.Arrived == r.Want
	if len(lat) > 0 {
		slices.Sort(lat)
		r.Duration = lat[len(lat)-1]
		r.P50, r.P95 = quantile(lat, 0.5), quantile(lat, 0.95)
	}
	return r
}

// quantile is the nearest-rank q-quantile of sorted.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// writeCSV writes the arrivals of the MPAs keys whose recommendation time
// is in [from, to) to path: mpa, recommendation time, arrival time, and
// whether the status changed in more than time and counters.
func (t *tracker) writeCSV(path string, keys []string, from, to time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	b.WriteString("mpa,recommendation,arrival,changed\n")
	for _, k := range keys {
		for _, a := range t.seen[k] {
			if a.rec.Before(from) || !a.rec.Before(to) {
				continue
			}
			fmt.Fprintf(&b, "%s,%s,%s,%t\n", k, a.rec.UTC().Format(time.RFC3339), a.at.UTC().Format(time.RFC3339Nano), a.changed)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	return nil
}

// statusFingerprint is s without what changes at every step whatever is
// decided: the recommendation's time and the agent's step counters.
func statusFingerprint(s *v1alpha1.MultidimPodAutoscalerStatus) string {
	c := s.DeepCopy()
	if c.Recommendation != nil {
		c.Recommendation.Time = nil
	}
	if c.Agent != nil {
		c.Agent.Step, c.Agent.EpisodeReward, c.Agent.LastStepReward = 0, 0, nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
