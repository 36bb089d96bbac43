package agents

import (
	"math"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// Transitions turns the recorded steps of trs (from the trajectory store)
// into agent transitions: each step of stage whose successor was recorded
// within maxGap of it becomes (its state, its allocation as the action
// under mapping from the allocation its state shows, its reward, the
// successor's state). Episodes of the controller follow each
// other without a gap, so an episode's last step links to the next
// episode's first (truncation is not termination). Steps with states or
// actions of the wrong width or non-finite values are skipped. until is the
// time of the last step read, whose successor is not known yet: read again
// from it to continue.
func Transitions(trs []trajectory.Trajectory, mapping gym.Mapping, space gym.Space, stage string, maxGap time.Duration) (out []agent.Transition, until time.Time) {
	bounds := gym.BoundsOf(space)
	var steps []trajectory.Step
	for _, tr := range trs {
		steps = append(steps, tr.Steps...)
	}
	slices.SortFunc(steps, func(a, b trajectory.Step) int { return a.Time.Compare(b.Time) })
	for i := 0; i+1 < len(steps); i++ {
		a, b := &steps[i], &steps[i+1]
		if a.Stage != stage || b.Time.Sub(a.Time) > maxGap || !usable(a, space) || !usable(b, space) {
			continue
		}
		out = append(out, agent.Transition{
			State: slices.Clone(a.State), Action: mapping.Encode(make([]float64, space.Dim()), a.Action, gym.Current(a.State, bounds), bounds),
			Reward: a.Reward, Next: slices.Clone(b.State),
		})
	}
	if len(steps) > 0 {
		until = steps[len(steps)-1].Time
	}
	return out, until
}

func usable(s *trajectory.Step, space gym.Space) bool {
	if len(s.State) != gym.StateDim || len(s.Action) != space.Dim() || !finite(s.Reward) {
		return false
	}
	return !slices.ContainsFunc(s.State, func(v float64) bool { return !finite(v) }) &&
		!slices.ContainsFunc(s.Action, func(v float64) bool { return !finite(v) })
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// nonFinite is the index of x's first NaN or infinite value, −1 if none.
func nonFinite(x []float64) int {
	return slices.IndexFunc(x, func(v float64) bool { return !finite(v) })
}
