package testbedrun

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/testbed/local"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// TestAgentSteps: a cell's acting steps come from the agent runner's
// checkpoint of its MPA (not from a folder the runner set aside, nor from
// a cell whose name the cell's name begins), and its rounds are the
// records of an acting stage up to that checkpoint.
func TestAgentSteps(t *testing.T) {
	dir := t.TempDir()
	ns := "aware-study-x"
	t0 := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	state := func(folder, mpa, uid string, steps int, saved time.Time) {
		p := filepath.Join(dir, ns, folder)
		require.NoError(t, os.MkdirAll(p, 0o755))
		b, err := json.Marshal(agents.State{UID: uid, MPA: ns + "/" + mpa, Steps: steps, Saved: saved})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(p, "state.json"), b, 0o600))
	}
	state("app-0801-u1", "app-0801", "u1", 12, t0.Add(time.Minute))
	state("app-0801-u1.unreadable-1", "app-0801", "u1", 99, t0.Add(time.Hour)) // set aside by the runner
	state("app-0801-boot-u2", "app-0801-boot", "u2", 5, t0.Add(time.Minute))
	state("app-0802-u3", "app-0802", "u3", 0, t0.Add(time.Minute)) // checkpointed before its first step

	var steps []trajectory.Step
	for i := range 30 { // a step every 3 s: 10 OFFLINE, then ONLINE
		stage := v1alpha1.StageOffline
		if i >= 10 {
			stage = v1alpha1.StageOnline
		}
		steps = append(steps, trajectory.Step{T: i, Time: t0.Add(time.Duration(3*i) * time.Second), Stage: string(stage)})
	}
	trajs := []trajectory.Trajectory{{Steps: steps}}
	r := &run{b: &Bed{Endpoints: local.Endpoints{Checkpoints: dir}}, ns: ns, o: Options{Log: slog.New(slog.DiscardHandler)}}

	for _, tc := range []struct {
		cell          string
		steps, rounds int
	}{
		{"app-0801", 12, 11}, // ONLINE records at 30 s … 60 s
		{"app-0801-boot", 5, 11},
		{"app-0802", 0, 0},
		{"app-0803", 0, 0}, // no checkpoint
	} {
		s, n, err := r.agentSteps(Cell{Name: tc.cell}, trajs)
		require.NoError(t, err, tc.cell)
		assert.Equal(t, [2]int{tc.steps, tc.rounds}, [2]int{s, n}, tc.cell)
	}

	// A cell with an initial policy: its agent was started when the
	// runner checkpointed it (even before its first step), not when it has
	// no checkpoint after a whole episode.
	pol := &Policy{}
	r.id = "run1"
	assert.NoError(t, r.policyLoaded(Cell{Name: "app-0802", Policy: pol}))
	err := r.policyLoaded(Cell{Name: "app-0803", Policy: pol})
	assert.ErrorContains(t, err, "cell app-0803: the agent runner has not started its agent from the initial policy app-0803-run1")
	assert.ErrorContains(t, err, agents.ReasonInitialPolicyUnreadable)
	assert.NoError(t, r.policyLoaded(Cell{Name: "app-0803"}), "no initial policy")

	r.b.Endpoints.Checkpoints = ""
	s, n, err := r.agentSteps(Cell{Name: "app-0801"}, trajs)
	require.NoError(t, err)
	assert.Zero(t, s+n, "a testbed without the runner's checkpoints")
	assert.NoError(t, r.policyLoaded(Cell{Name: "app-0803", Policy: pol}), "nothing to read it from")
}

// TestCellValidate: what a cell must be to run.
func TestCellValidate(t *testing.T) {
	ok := Cell{Name: "app-0801-aware", Episodes: 4, Recommender: AgentName}
	ok.App.Spec.Name, ok.Sim.Name = "app-0801", "app-0801"
	require.NoError(t, ok.validate())
	for _, tc := range []struct {
		name string
		edit func(*Cell)
		want string
	}{
		{"name", func(c *Cell) { c.Name = "App_1" }, "cell name"},
		{"episodes", func(c *Cell) { c.Episodes = 0 }, "0 episodes"},
		{"simulator app", func(c *Cell) { c.Sim.Name = "app-0802" }, "is not the application"},
		{"policy without an agent", func(c *Cell) { c.Policy = &Policy{} }, "an initial policy needs an agent"},
		{"policy for HPA+VPA", func(c *Cell) {
			c.Policy, c.Recommender = &Policy{Agent: fakeAgent{}}, v1alpha1.DefaultRecommenderName
		}, "an initial policy needs an agent"},
		{"scenario after the last episode", func(c *Cell) { c.Scenario, c.InjectAfter = sim.LoadHigh, 4 }, "scenario after 4 episodes"},
		{"scenario before the first", func(c *Cell) { c.Scenario, c.InjectAfter = sim.LoadHigh, -1 }, "scenario after -1 episodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			assert.ErrorContains(t, c.validate(), tc.want)
		})
	}
	c := ok
	c.Scenario, c.InjectAfter = sim.LoadHigh, 3
	assert.NoError(t, c.validate(), "the scenario before the last episode")
}

// fakeAgent is an agent that does nothing.
type fakeAgent struct{ agent.Agent }

func TestNextPoll(t *testing.T) {
	assert.Equal(t, 1500*time.Millisecond, next(true, 1500*time.Millisecond, 12*time.Second), "a scenario due: half a step")
	assert.Equal(t, time.Second, next(true, 1500*time.Millisecond, time.Second), "the full poll comes first")
	assert.Equal(t, 12*time.Second, next(false, 1500*time.Millisecond, 12*time.Second))
	assert.Equal(t, time.Millisecond, next(false, time.Second, -time.Second), "a full poll overdue")
}
