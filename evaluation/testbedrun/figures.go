package testbedrun

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/gym"
)

// Health is how completely the system ran a cell, from its records in the
// trajectory store: every figure must be 0 for the cell's figures to be
// those of the controller's every round.
type Health struct {
	// Records are the steps the store holds for the cell.
	Records int `json:"records"`
	// MissedRounds are the controller rounds, between the cell's first and
	// last record, that left no record (a gap between consecutive records
	// of more than one step, in whole steps).
	MissedRounds int `json:"missedRounds"`
	// LostSteps are holes in an episode's step numbers and the steps
	// missing from episodes left incomplete before the last.
	LostSteps int `json:"lostSteps"`
	// StaleActions are rounds in an acting stage on which the controller
	// held because the agent's last recommendation grew older than it
	// accepts before it was applied (an action lost), from the
	// controller's per-MPA counter
	// aware_controller_stale_recommendation_steps_total{cause="stale"}
	// over the run.
	StaleActions int `json:"staleActions"`
	// ActionHeld are the rounds the agent's applied action stayed in force
	// while the agent waited to observe it ({cause="applied"}): an agent
	// on the cluster acts every two controller steps or more (it waits for
	// the actuation and a whole step after it), where the simulator's acts
	// at every step. Reported, not a defect.
	ActionHeld int `json:"actionHeld"`
	// AwaitingFirst are the rounds the controller held after the agent
	// entered an acting stage and before the agent runner's first
	// recommendation of that stage ({cause="first"}): the runner's
	// reaction time to a stage change, a delay the simulator has not.
	// Reported, not a defect.
	AwaitingFirst int `json:"awaitingFirst"`
}

// Clean reports whether nothing was missed, lost or stale.
func (h Health) Clean() bool { return h.MissedRounds == 0 && h.LostSteps == 0 && h.StaleActions == 0 }

// Add sums two cells' health.
func (h Health) Add(o Health) Health {
	return Health{Records: h.Records + o.Records, MissedRounds: h.MissedRounds + o.MissedRounds,
		LostSteps: h.LostSteps + o.LostSteps, StaleActions: h.StaleActions + o.StaleActions,
		AwaitingFirst: h.AwaitingFirst + o.AwaitingFirst, ActionHeld: h.ActionHeld + o.ActionHeld}
}

// Episodes turns a cell's records (its trajectories in the store, in any
// order) into the figures the simulator's training loop reports
// (train.Episode), so that both are summarised by the same code. A record
// holds the state the action was taken in and the reward of the step
// after it, so a step's utilisation and SLO preservation are read from the
// state of the record that follows it (the next step's observation);
// an episode's last step takes them from the next episode's first record,
// and the cell's very last step, which has none, counts its reward only.
// Only the first n complete episodes are returned (all when n <= 0); an
// incomplete episode followed by another (abandoned by the controller) is
// left out.
func Episodes(trajs []trajectory.Trajectory, episodeLength, n int) ([]train.Episode, error) {
	steps := flatten(trajs)
	if len(steps) == 0 {
		return nil, fmt.Errorf("testbedrun: no records")
	}
	var out []train.Episode
	var cur *train.Episode
	measured := 0
	flush := func() {
		if cur == nil {
			return
		}
		if measured > 0 {
			cur.CPUUtil /= float64(measured)
			cur.MemoryUtil /= float64(measured)
			cur.Replicas /= float64(measured)
			cur.CPU /= float64(measured)
			cur.Memory /= float64(measured)
		}
		out = append(out, *cur)
		cur, measured = nil, 0
	}
	for i, s := range steps {
		if cur != nil && s.Episode != steps[i-1].Episode {
			if cur.Steps != episodeLength {
				// Abandoned by the controller (its store was out of step):
				// outside every figure, as outside the controller's own
				// statistics; Completeness counts its missing steps.
				cur, measured = nil, 0
			} else {
				flush()
				if n > 0 && len(out) == n {
					return out, nil
				}
			}
		}
		if cur == nil {
			if s.T != 0 {
				return out, fmt.Errorf("testbedrun: %s episode %d starts at step %d", s.App, s.Episode, s.T)
			}
			cur = &train.Episode{Index: len(out)}
		}
		cur.Reward += s.Reward
		cur.Steps++
		if i+1 < len(steps) {
			next := steps[i+1].State
			if len(next) < gym.StateDim {
				return out, fmt.Errorf("testbedrun: %s episode %d step %d: state of %d values, want %d", s.App, steps[i+1].Episode, steps[i+1].T, len(next), gym.StateDim)
			}
			cur.CPUUtil += next[gym.StCPUUtil]
			cur.MemoryUtil += next[gym.StMemoryUtil]
			if next[gym.StSP] < 1 {
				cur.SLOViolations++
			}
			if len(s.Action) == gym.ActDim {
				cur.Replicas += s.Action[0]
				cur.CPU += s.Action[1]
				cur.Memory += s.Action[2]
			}
			measured++
		}
	}
	if cur != nil && cur.Steps == episodeLength && (n <= 0 || len(out) < n) {
		flush()
	}
	if n > 0 && len(out) < n {
		return out, fmt.Errorf("testbedrun: %s: %d complete episodes recorded, want %d", steps[0].App, len(out), n)
	}
	return out, nil
}

// injectedAt is the first of a cell's records (trajs, its first episode
// first) whose step ended after at: where a scenario injected at at hit
// (nil when no record is after it).
func injectedAt(trajs []trajectory.Trajectory, at time.Time) *Point {
	steps := flatten(trajs)
	if len(steps) == 0 {
		return nil
	}
	first := steps[0].Episode
	for _, s := range steps {
		if s.Time.After(at) {
			return &Point{Episode: int(s.Episode - first), Step: s.T}
		}
	}
	return nil
}

// flatten is every record of trajs in (episode, step) order.
func flatten(trajs []trajectory.Trajectory) []trajectory.Step {
	var steps []trajectory.Step
	for _, t := range trajs {
		steps = append(steps, t.Steps...)
	}
	slices.SortStableFunc(steps, func(a, b trajectory.Step) int {
		if a.Episode != b.Episode {
			if a.Episode < b.Episode {
				return -1
			}
			return 1
		}
		return a.T - b.T
	})
	return steps
}

// Completeness measures a cell's records against the controller's rounds
// of length step (wall time): rounds between the first and the last record
// that left none, holes in episodes' step numbers and steps missing from
// incomplete episodes followed by another. The last episode may be
// incomplete (the run stopped in it).
func Completeness(trajs []trajectory.Trajectory, episodeLength int, step time.Duration) Health {
	steps := flatten(trajs)
	h := Health{Records: len(steps)}
	if len(steps) == 0 {
		return h
	}
	times := make([]time.Time, len(steps))
	for i, s := range steps {
		times[i] = s.Time
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(times); i++ {
		if gap := int(math.Round(float64(times[i].Sub(times[i-1])) / float64(step))); gap > 1 {
			h.MissedRounds += gap - 1
		}
	}
	last := steps[len(steps)-1].Episode
	for i := 0; i < len(steps); {
		j := i
		for j < len(steps) && steps[j].Episode == steps[i].Episode {
			j++
		}
		want := 0
		for _, s := range steps[i:j] {
			if s.T != want {
				h.LostSteps += max(0, s.T-want)
			}
			want = s.T + 1
		}
		if steps[i].Episode != last && want < episodeLength {
			h.LostSteps += episodeLength - want
		}
		i = j
	}
	return h
}

// Transition is one lifecycle change the controller made.
type Transition struct {
	From, To string
	// Reason and Message are the controller's StageChanged Event's (the
	// reason names the rule, the message the figures that decided it);
	// empty when the Event was not found (Events are rate-limited).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Episode is the cell's first episode (from 0) in the new stage.
	Episode int `json:"episode"`
}

// stageChanged parses the message of the controller's StageChanged Event:
// "agent stage FROM → TO (REASON): message".
var stageChanged = regexp.MustCompile(`^agent stage (\S+) → (\S+) \(([^)]*)\): ?(.*)$`)

// ParseStageChanged reads a StageChanged Event's message.
func ParseStageChanged(msg string) (Transition, error) {
	m := stageChanged.FindStringSubmatch(msg)
	if m == nil {
		return Transition{}, fmt.Errorf("testbedrun: not a stage change: %q", msg)
	}
	return Transition{From: m[1], To: m[2], Reason: m[3], Message: m[4]}, nil
}

// Stages is the lifecycle a cell's records show: the stage each record was
// taken in (the controller writes it with every step), a change between
// consecutive records being a transition into the episode of the later
// one; the first record's stage was entered from Initialized at episode 0.
// Episodes count from the cell's first. events are the controller's
// StageChanged Events of the cell, in time order: each transition takes
// the reason and message of the first unused Event with its stages.
// Records cannot be rate-limited as Events are, so the list is complete
// whether or not every Event was kept.
func Stages(trajs []trajectory.Trajectory, events []Transition) []Transition {
	steps := flatten(trajs)
	if len(steps) == 0 {
		return nil
	}
	first := steps[0].Episode
	out := []Transition{{From: string(v1alpha1.StageInitialized), To: steps[0].Stage}}
	for i := 1; i < len(steps); i++ {
		if steps[i].Stage != steps[i-1].Stage {
			out = append(out, Transition{From: steps[i-1].Stage, To: steps[i].Stage, Episode: int(steps[i].Episode - first)})
		}
	}
	used := make([]bool, len(events))
	for i := range out {
		for j, e := range events {
			if !used[j] && e.From == out[i].From && e.To == out[i].To {
				used[j] = true
				out[i].Reason, out[i].Message = e.Reason, e.Message
				break
			}
		}
	}
	return out
}
