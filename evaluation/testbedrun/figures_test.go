package testbedrun

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// records makes a cell's trajectories: episodes of length steps each, a
// record every step (wall), state i's CPU utilisation i/100, SP 1 except at
// the steps in violated, the reward of step k being k.
func records(episodes, length int, step time.Duration, violated map[int]bool) []trajectory.Trajectory {
	var out []trajectory.Trajectory
	k := 0
	for e := range episodes {
		tr := trajectory.Trajectory{}
		for t := range length {
			st := make([]float64, gym.StateDim)
			st[gym.StCPUUtil] = float64(k) / 100
			st[gym.StMemoryUtil] = 0.5
			st[gym.StSP] = 1
			if violated[k] {
				st[gym.StSP] = 0.5
			}
			tr.Steps = append(tr.Steps, trajectory.Step{App: "ns/c", Episode: int64(e), T: t, Time: t0.Add(time.Duration(k) * step),
				State: st, Action: []float64{2, 0.5, 1 << 28}, Reward: float64(k), Done: t == length-1})
			k++
		}
		out = append(out, tr)
	}
	return out
}

func TestEpisodes(t *testing.T) {
	// Step k's utilisation and SP are in record k+1's state.
	trajs := records(3, 4, time.Second, map[int]bool{2: true, 5: true})
	eps, err := Episodes(trajs, 4, 2)
	require.NoError(t, err)
	require.Len(t, eps, 2)
	assert.Equal(t, 0+1+2+3.0, eps[0].Reward)
	assert.Equal(t, 4, eps[0].Steps)
	assert.InDelta(t, (1+2+3+4)/400.0, eps[0].CPUUtil, 1e-12, "the next record's state")
	assert.Equal(t, 1, eps[0].SLOViolations, "record 2's state is step 1's: one violation in episode 0")
	assert.Equal(t, 1, eps[1].SLOViolations, "record 5's state is step 4's")
	assert.InDelta(t, 2, eps[0].Replicas, 1e-12)

	all, err := Episodes(trajs, 4, 0)
	require.NoError(t, err)
	require.Len(t, all, 3)
	assert.InDelta(t, (9+10+11)/300.0, all[2].CPUUtil, 1e-12, "the cell's last step has no next record: its reward counts, not its state")

	_, err = Episodes(trajs, 4, 4)
	assert.ErrorContains(t, err, "3 complete episodes recorded, want 4")

	// An episode the controller abandoned is left out of the figures.
	cut := records(3, 4, time.Second, nil)
	cut[1].Steps = cut[1].Steps[:3]
	eps, err = Episodes(cut, 4, 0)
	require.NoError(t, err)
	require.Len(t, eps, 2)
	assert.Equal(t, 8+9+10+11.0, eps[1].Reward)
	_, err = Episodes(cut, 4, 3)
	assert.ErrorContains(t, err, "2 complete episodes recorded, want 3")

	_, err = Episodes(nil, 4, 1)
	assert.Error(t, err)
}

func TestCompleteness(t *testing.T) {
	step := 2 * time.Second
	for _, tc := range []struct {
		name  string
		edit  func([]trajectory.Trajectory) []trajectory.Trajectory
		check func(*testing.T, Health)
	}{
		{"every round", func(tr []trajectory.Trajectory) []trajectory.Trajectory { return tr },
			func(t *testing.T, h Health) { assert.Equal(t, Health{Records: 12}, h); assert.True(t, h.Clean()) }},
		{"a round without a record", func(tr []trajectory.Trajectory) []trajectory.Trajectory {
			for i := range tr[1].Steps {
				tr[1].Steps[i].Time = tr[1].Steps[i].Time.Add(2 * step)
			}
			for i := range tr[2].Steps {
				tr[2].Steps[i].Time = tr[2].Steps[i].Time.Add(2 * step)
			}
			return tr
		}, func(t *testing.T, h Health) { assert.Equal(t, 2, h.MissedRounds); assert.Zero(t, h.LostSteps) }},
		{"a step lost in an episode", func(tr []trajectory.Trajectory) []trajectory.Trajectory {
			tr[1].Steps = append(tr[1].Steps[:1], tr[1].Steps[2:]...)
			return tr
		}, func(t *testing.T, h Health) { assert.Equal(t, 1, h.LostSteps); assert.Equal(t, 1, h.MissedRounds) }},
		{"an episode abandoned", func(tr []trajectory.Trajectory) []trajectory.Trajectory {
			tr[0].Steps = tr[0].Steps[:2]
			return tr
		}, func(t *testing.T, h Health) { assert.Equal(t, 2, h.LostSteps) }},
		{"the last episode may be running", func(tr []trajectory.Trajectory) []trajectory.Trajectory {
			tr[2].Steps = tr[2].Steps[:1]
			return tr
		}, func(t *testing.T, h Health) { assert.Zero(t, h.LostSteps); assert.Zero(t, h.MissedRounds) }},
		{"a late round is not a missed one", func(tr []trajectory.Trajectory) []trajectory.Trajectory {
			tr[1].Steps[0].Time = tr[1].Steps[0].Time.Add(step * 4 / 10)
			return tr
		}, func(t *testing.T, h Health) { assert.Zero(t, h.MissedRounds) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, Completeness(tc.edit(records(3, 4, step, nil)), 4, step))
		})
	}
}

func TestParseStageChanged(t *testing.T) {
	tr, err := ParseStageChanged("agent stage Offline → Online (RewardReachedOnline): mean reward 11.2 (std 0.3) over the last 10 episodes reached the online threshold 0.001")
	require.NoError(t, err)
	assert.Equal(t, Transition{From: "Offline", To: "Online", Reason: "RewardReachedOnline",
		Message: "mean reward 11.2 (std 0.3) over the last 10 episodes reached the online threshold 0.001"}, tr)
	_, err = ParseStageChanged("replicas 2 → 3")
	assert.Error(t, err)
}

func TestStages(t *testing.T) {
	trajs := records(4, 3, time.Second, nil)
	for i, tr := range trajs {
		for j := range tr.Steps {
			tr.Steps[j].Stage = "Offline"
			if i >= 2 {
				tr.Steps[j].Stage = "Online"
			}
		}
	}
	events := []Transition{
		{From: "Initialized", To: "Offline", Reason: "Bootstrapping"},
		{From: "Offline", To: "Online", Reason: "RewardReachedOnline", Message: "mean reward 1"},
	}
	assert.Equal(t, []Transition{
		{From: "Initialized", To: "Offline", Reason: "Bootstrapping"},
		{From: "Offline", To: "Online", Reason: "RewardReachedOnline", Message: "mean reward 1", Episode: 2},
	}, Stages(trajs, events))
	// A change whose Event the recorder dropped is in the list all the
	// same, without a reason.
	assert.Equal(t, []Transition{
		{From: "Initialized", To: "Offline", Reason: "Bootstrapping"},
		{From: "Offline", To: "Online", Episode: 2},
	}, Stages(trajs, events[:1]))
	assert.Nil(t, Stages(nil, events))
}

func TestClock(t *testing.T) {
	require.NoError(t, DefaultClock().Validate())
	assert.Equal(t, 3*time.Second, DefaultClock().Wall())
	assert.Equal(t, 10*time.Second, DefaultClock().TwinSimStep())
	for _, k := range []float64{1, 2, 3, 5, 6, 10} {
		assert.NoError(t, Clock{Step: 30 * time.Second, Speedup: k}.Validate(), "speed-up %g", k)
	}
	for _, c := range []Clock{{Step: 30 * time.Second, Speedup: MaxSpeedup + 1}, {Step: 30 * time.Second, Speedup: 0.5},
		{Step: 1500 * time.Millisecond, Speedup: 1}, {Step: 30 * time.Second, Speedup: 2.5}} {
		assert.Error(t, c.Validate(), "%+v", c)
	}
	assert.ErrorContains(t, Clock{Step: 30 * time.Second, Speedup: 2.5}.Validate(), "--time-scale 2.5")
	assert.ErrorContains(t, Clock{Step: 30 * time.Second, Speedup: 15}.Validate(), "skipped rounds")
}

func TestInjectedAt(t *testing.T) {
	trajs := records(3, 4, time.Second, nil) // record k ended at t0 + k s
	tests := []struct {
		name string
		at   time.Time
		want *Point
	}{
		{"before the first record", t0.Add(-time.Second), &Point{0, 0}},
		{"as the first episode ends", t0.Add(3*time.Second + time.Millisecond), &Point{1, 0}},
		{"mid-episode", t0.Add(5*time.Second + 500*time.Millisecond), &Point{1, 2}},
		{"at a record's end: the next one", t0.Add(6 * time.Second), &Point{1, 3}},
		{"after the last record", t0.Add(time.Minute), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, injectedAt(trajs, tt.at))
		})
	}
	assert.Nil(t, injectedAt(nil, t0))
}
