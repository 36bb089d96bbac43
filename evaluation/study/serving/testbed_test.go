package serving

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/evaluation/train"
)

// testbedResult is a cell of n episodes whose figures step from before to
// after at episode k.
func testbedResult(cell string, n, k int, before, after lab.Means, stages ...testbedrun.Transition) testbedrun.Result {
	r := testbedrun.Result{Cell: cell, Stages: stages, Health: testbedrun.Health{Records: n * 10}, Injected: &testbedrun.Point{Episode: k}}
	for i := range n {
		m := before
		if i >= k {
			m = after
		}
		r.Episodes = append(r.Episodes, train.Episode{Index: i, Reward: m.Reward, Steps: 10, SLOViolations: int(m.SLOViolations), CPUUtil: m.CPUUtil, MemoryUtil: m.MemoryUtil})
	}
	return r
}

// TestTestbedReport: the testbed's tables beside the simulator's, a
// testbed figure outside the simulator's interval said to be, the
// controller's stage changes beside the simulator's, where the scenario
// hit and the completeness.
func TestTestbedReport(t *testing.T) {
	c, plan, runs := synthetic()
	c.EpisodeSteps = 10
	c.Testbed = &Testbed{Clock: testbedrun.DefaultClock(), Arms: TestbedArms}
	outs, err := Outcomes(c, plan, runs)
	require.NoError(t, err)
	good := lab.Means{Reward: 100, CPUUtil: 0.6, MemoryUtil: 0.5, SLOViolations: 1}
	bad := lab.Means{Reward: 50, CPUUtil: 0.3, MemoryUtil: 0.25, SLOViolations: 20}
	serve := testbedrun.Transition{From: "Initialized", To: "Serving", Reason: "StartServing"}
	tb := map[[2]string]testbedrun.Result{}
	for _, u := range []Unit{{App: "app-0801", Scenario: "load-high"}, {App: "app-0802", Scenario: "file-sizes"}} {
		aw := testbedResult(cellName(u, AWARE), 8, 2, good, bad, serve,
			testbedrun.Transition{From: "Serving", To: "Online", Reason: "RewardDropped", Episode: 3})
		for e := 5; e < 8; e++ {
			aw.Episodes[e] = train.Episode{Index: e, Reward: 100, Steps: 10, SLOViolations: 1, CPUUtil: 0.6, MemoryUtil: 0.5}
		}
		tb[[2]string{unitKey(u), AWARE}] = aw
		tb[[2]string{unitKey(u), NoRetrain}] = testbedResult(cellName(u, NoRetrain), 8, 2, good, bad, serve)
		tb[[2]string{unitKey(u), Rule}] = testbedResult(cellName(u, Rule), 8, 2, good, lab.Means{Reward: 90, CPUUtil: 0.6, MemoryUtil: 0.5, SLOViolations: 1}) // below the simulator's 100
	}
	h := tb[[2]string{"app-0802/file-sizes", Rule}]
	h.Health.MissedRounds, h.Injected = 1, nil
	tb[[2]string{"app-0802/file-sizes", Rule}] = h
	cad := Cadence{Every: map[string]float64{AWARE: 2.4}, Acts: map[string]int{AWARE: 2}, Runs: map[string]Run{}, Unmeasured: []string{NoRetrain}}
	for i, cell := range plan {
		if cell.Arm == AWARE {
			run := runs[i]
			run.Stages = []string{"Serving", "Serving", "Serving", "Serving", "Online", "Online", "Online", "Online"}
			cad.Runs[unitKey(Unit{App: cell.App, Scenario: cell.Scenario})+"/"+AWARE] = run
		}
	}
	rep := study.Report{}
	require.NoError(t, testbedReport(&rep, c, plan, runs, outs, tb, cad, study.DefaultBootstrap()))
	var b strings.Builder
	require.NoError(t, rep.Markdown(&b))
	md := b.String()
	assert.Contains(t, md, "| AWARE | reward | 75 [75, 75] | 75 [75, 75] | 0 [0, 0] | yes |")
	assert.Contains(t, md, "| rule-based | reward | 90 [90, 90] | 100 [100, 100] | -10 [-10, -10] | no |")
	assert.Contains(t, md, "| app-0801-load-high-aware | 0: Initialized → Serving (StartServing); 3: Serving → Online (RewardDropped) | 0: Initialized → Serving; 3: Serving → Online; 6: Online → Serving; run as the testbed runs it: 0: Initialized → Serving; 4: Serving → Online |")
	assert.Contains(t, md, "Controller steps per agent action on the testbed: AWARE 2.40 (the simulator's agent acting every 2)")
	assert.Contains(t, md, "The agent's cadence on the testbed was not measured for no-retraining")
	assert.Contains(t, md, "| app-0801-load-high-frozen | 0: Initialized → Serving (StartServing) | 0: Initialized → Serving |")
	assert.Contains(t, md, "| app-0801-load-high-aware | 3.1 | 3.1 |")
	assert.Contains(t, md, "| app-0802-file-sizes-rule | not recorded | 3.1 |")
	assert.Contains(t, md, "| all | 480 | 1 | 0 | 0 | 0 | 0 |")
	labtest.Golden(t, "testbed.golden.md", md)

	err = lab.CheckComplete(Name, tb, c.Testbed.Clock.Speedup)
	assert.ErrorIs(t, err, lab.ErrIncomplete)
	assert.ErrorContains(t, err, "1 rounds missed")
}

// TestTestbedCells: each arm's MPA as the study runs it on the testbed,
// and the simulator's AWARE run from the same profile.
func TestTestbedCells(t *testing.T) {
	l := labtest.New(t)
	c := OnTestbed(false)
	c.Apps, c.Scenarios, c.Converged = 1, []string{"load-high"}, 5
	units, err := c.Draw(l)
	require.NoError(t, err)
	r := &Runner{Lab: l, Policies: labtest.Policies(t, l), Config: c}
	cells, err := r.testbedCells(context.Background(), units)
	require.NoError(t, err)
	require.Len(t, cells, 3)
	ref, _, err := r.converged(context.Background(), units[0].App, c.Seed)
	require.NoError(t, err)
	profile := func(cell testbedrun.Cell) v1alpha1.AgentProfile {
		p := cell.App.Profile
		cell.Profile(&p)
		p.Default()
		require.NoError(t, p.Validate(), cell.Name)
		return p
	}
	for _, cell := range cells {
		assert.Equal(t, c.Before+c.After, cell.Episodes, cell.Name)
		assert.Equal(t, "load-high", cell.Scenario.String(), cell.Name)
		assert.Equal(t, c.Before, cell.InjectAfter, cell.Name)
		assert.Equal(t, c.EpisodeSteps, profile(cell).EpisodeLength, cell.Name)
		assert.False(t, profile(cell).Bootstraps(), cell.Name)
	}
	aware, frozen, rule := cells[0], cells[1], cells[2]
	assert.Equal(t, units[0].App+"-load-high-aware", aware.Name)
	for _, cell := range []testbedrun.Cell{aware, frozen} {
		assert.Equal(t, testbedrun.AgentName, cell.Recommender)
		require.NotNil(t, cell.Policy, cell.Name)
		assert.Equal(t, agents.KindDDPG, cell.Policy.Kind)
		assert.Equal(t, l.Config().Mapping, cell.Policy.Mapping)
		assert.Equal(t, v1alpha1.StageServing, autoscaler.NextStage(v1alpha1.StageInitialized, profile(cell), nil), "%s starts SERVING", cell.Name)
	}
	p := profile(aware)
	assert.InDelta(t, 0.9*ref, p.Thresholds.Serving, 1e-9)
	assert.InDelta(t, 0.1*ref, p.Thresholds.Variance, 1e-9)
	assert.Equal(t, c.Window, p.Thresholds.Window)
	assert.Equal(t, c.profile(ref).Thresholds, p.Thresholds, "the simulator's AWARE retrains on the same thresholds")
	// The frozen agent serves whatever its rewards.
	fp := profile(frozen)
	assert.Equal(t, v1alpha1.StageServing, autoscaler.NextStage(v1alpha1.StageServing, fp, []float64{0.001, 20, 0.001, 20, 0.001}))
	assert.Equal(t, v1alpha1.DefaultRecommenderName, rule.Recommender)
	assert.Nil(t, rule.Policy)
	assert.False(t, profile(rule).StartServing)
}

// TestAtCadence: the agent arms run again as the testbed runs them (at
// its cadence, one running service) differ from the study's cells, are
// kept in the study's folder and reused, and a render-only run without
// them runs none.
func TestAtCadence(t *testing.T) {
	ctx := context.Background()
	l := labtest.New(t)
	c := OnTestbed(false)
	c.Apps, c.Scenarios, c.Converged, c.Before, c.After, c.Window = 1, []string{"load-high"}, 5, 2, 4, 2
	units, err := c.Draw(l)
	require.NoError(t, err)
	r := &Runner{Lab: l, Policies: labtest.Policies(t, l), Config: c}
	k := unitKey(units[0])
	tb := map[[2]string]testbedrun.Result{
		{k, AWARE}:     {AgentSteps: 30, AgentRounds: 66},
		{k, NoRetrain}: {}, // not measured
	}
	dir := t.TempDir()
	cad, err := r.atCadence(ctx, dir, false, units, tb)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{AWARE: 2}, cad.Acts)
	assert.Equal(t, []string{NoRetrain}, cad.Unmeasured)
	run, ok := cad.Runs[k+"/"+AWARE]
	require.True(t, ok)
	assert.Len(t, run.Rewards, c.Before+c.After)
	assert.Len(t, run.Stages, c.Before+c.After)
	assert.Equal(t, "Serving", run.Stages[0])
	cell, err := r.Cell(ctx, study.Cell{Arm: AWARE, App: units[0].App, Scenario: units[0].Scenario, Seed: c.Seed})
	require.NoError(t, err)
	assert.NotEqual(t, cell.Rewards, run.Rewards, "the study's cell acts at every step and resets every episode")
	assert.FileExists(t, filepath.Join(dir, CadenceFile))

	again, err := r.atCadence(ctx, dir, true, units, tb)
	require.NoError(t, err, "kept: rendering reuses it")
	assert.Equal(t, cad.Runs, again.Runs)
	none, err := r.atCadence(ctx, t.TempDir(), true, units, tb)
	require.NoError(t, err)
	assert.True(t, none.NotRun)
	assert.Empty(t, none.Runs)
}
