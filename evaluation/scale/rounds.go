package scale

import (
	"math"
	"time"
)

// Round is one measured round as the controller reports it
// (aware_controller_last_round).
type Round struct {
	// Start is the round's boundary T, a multiple of the step in wall-clock
	// time: the controller begins every MPA's step at T.
	Start time.Time
	// Steps is how many MPA steps the round had, of Want MPAs.
	Steps, Want int
	// Complete is Steps ≥ Want.
	Complete bool
	// Reported is false when the controller reported no figures for the
	// round (it finished no step of a later round in time).
	Reported bool
	// Duration is from T until the round's last MPA step finished.
	Duration time.Duration
	// Written and Unchanged count the round's steps whose status changed
	// (and was written) or did not (no API call).
	Written, Unchanged int
}

// roundOf is round T as reported in c; ok is false when c's last reported
// round is not T.
func roundOf(T time.Time, want int, c counters) (Round, bool) {
	start := time.Unix(0, int64(math.Round(c.LastRound["start"]*1e9)))
	if d := start.Sub(T); d < -time.Millisecond || d > time.Millisecond {
		return Round{Start: T, Want: want}, false
	}
	steps, written := int(c.LastRound["steps"]), int(c.LastRound["written"])
	return Round{
		Start: T, Steps: steps, Want: want, Complete: steps >= want, Reported: true,
		Duration: time.Duration(c.LastRound["seconds"] * float64(time.Second)),
		Written:  written, Unchanged: steps - written,
	}, true
}
