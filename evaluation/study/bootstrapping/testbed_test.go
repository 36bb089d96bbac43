package bootstrapping

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/evaluation/train"
)

// testbedResult is a cell whose every episode has the given figures.
func testbedResult(cell string, n int, reward, slo, cpu, mem float64, stages ...testbedrun.Transition) testbedrun.Result {
	r := testbedrun.Result{Cell: cell, Stages: stages, Health: testbedrun.Health{Records: n * 10}}
	for i := range n {
		r.Episodes = append(r.Episodes, train.Episode{Index: i, Reward: reward, Steps: 10, SLOViolations: int(slo), CPUUtil: cpu, MemoryUtil: mem})
	}
	return r
}

// TestTestbedReport: the testbed's tables beside the simulator's, with a
// testbed figure inside the simulator's interval said to be, one outside
// said not to be, the controller's stage changes and the completeness.
func TestTestbedReport(t *testing.T) {
	c, plan, runs := synthetic()
	c.EpisodeSteps = 10
	c.Testbed = &Testbed{Clock: testbedrun.DefaultClock(), Arms: TestbedArms}
	outs, err := Outcomes(c, plan, runs)
	require.NoError(t, err)
	tb := map[[2]string]testbedrun.Result{}
	for _, a := range []string{"app-0801", "app-0802"} {
		tb[[2]string{a, AWARE}] = testbedResult(cellName(a, AWARE), 10, 120, 2, 0.5, 0.4,
			testbedrun.Transition{From: "Initialized", To: "Offline", Reason: "Bootstrapping"},
			testbedrun.Transition{From: "Offline", To: "Online", Reason: "RewardReachedOnline", Episode: 4})
		tb[[2]string{a, NoBoot}] = testbedResult(cellName(a, NoBoot), 10, 50, 30, 0.25, 0.1) // reward below the simulator's 60
		tb[[2]string{a, Rule}] = testbedResult(cellName(a, Rule), 10, 130, 1, 0.45, 0.5)
	}
	h := tb[[2]string{"app-0802", Rule}]
	h.Health.MissedRounds = 2
	tb[[2]string{"app-0802", Rule}] = h
	rep := study.Report{}
	cad := Cadence{Every: map[string]float64{AWARE: 2.4}, Acts: map[string]int{AWARE: 2}, Outs: outs, Unmeasured: []string{NoBoot}}
	require.NoError(t, testbedReport(&rep, c, outs, tb, cad, study.DefaultBootstrap()))
	var b strings.Builder
	require.NoError(t, rep.Markdown(&b))
	md := b.String()
	assert.Contains(t, md, "| AWARE-bootstrapped | reward | 120 [120, 120] | 120 [120, 120] | 0 [0, 0] | yes |")
	assert.Contains(t, md, "| no-bootstrapping | reward | 50 [50, 50] | 60 [60, 60] | -10 [-10, -10] | no |")
	assert.Contains(t, md, "| app-0801-boot | 0: Initialized → Offline (Bootstrapping); 4: Offline → Online (RewardReachedOnline) | 0: Initialized → Offline; 4: Offline → Online |")
	assert.Contains(t, md, "| all | 600 | 2 | 0 | 0 | 0 | 0 |")
	assert.Contains(t, md, "over the acting stages: AWARE-bootstrapped 2.40 (the simulator's agent acting every 2). And the testbed's episodes")
	assert.Contains(t, md, "The agent's cadence on the testbed was not measured for no-bootstrapping")
	labtest.Golden(t, "testbed.golden.md", md)
}

// TestTestbedCells: each arm's MPA as the study runs it on the testbed.
func TestTestbedCells(t *testing.T) {
	l := labtest.New(t)
	c := OnTestbed(false)
	c.Apps = 1
	apps, err := c.Draw(l)
	require.NoError(t, err)
	r := &Runner{Lab: l, Config: c}
	cells, err := r.testbedCells(context.Background(), apps)
	require.NoError(t, err)
	require.Len(t, cells, 3)
	tuned, err := l.CPUTarget(context.Background(), apps[0])
	require.NoError(t, err)
	profile := func(cell testbedrun.Cell) v1alpha1.AgentProfile {
		p := cell.App.Profile
		cell.Profile(&p)
		p.Default()
		require.NoError(t, p.Validate())
		return p
	}
	for _, cell := range cells {
		assert.Equal(t, tuned.Target, cell.CPUTarget, cell.Name)
		assert.Equal(t, c.Episodes, cell.Episodes)
		assert.Equal(t, apps[0], cell.Sim.Name)
		_, onSim, err := l.App(apps[0])
		require.NoError(t, err)
		assert.InDelta(t, 3, float64(len(cell.Sim.Load.Shape))/float64(len(onSim.Load.Shape)), 0.01, "the twin's shape: at a third of the controller's 30 s step")
		p := profile(cell)
		assert.Equal(t, c.EpisodeSteps, p.EpisodeLength)
		if cell.Recommender == testbedrun.AgentName {
			assert.Equal(t, 2.0*float64(c.EpisodeSteps), p.Thresholds.Serving, "%s: never frozen, as on the simulator", cell.Name)
			assert.Equal(t, 1e-9, p.Thresholds.Variance, cell.Name)
		}
	}
	boot, cold, rule := cells[0], cells[1], cells[2]
	assert.Equal(t, apps[0]+"-boot", boot.Name)
	assert.Equal(t, testbedrun.AgentName, boot.Recommender)
	assert.True(t, profile(boot).Bootstraps())
	assert.Equal(t, c.Records, profile(boot).Thresholds.Window, "hand-over after the records")
	assert.False(t, profile(cold).Bootstraps())
	assert.Equal(t, testbedrun.AgentName, cold.Recommender)
	assert.Equal(t, v1alpha1.DefaultRecommenderName, rule.Recommender)
}

// TestTestbedRecordRefusesAnotherConfiguration: results of the testbed
// cells are reused by the same configuration only.
func TestTestbedRecordRefusesAnotherConfiguration(t *testing.T) {
	dir := t.TempDir()
	c := OnTestbed(false)
	rec := struct {
		Config  Config              `json:"config"`
		Apps    []string            `json:"apps"`
		Results []testbedrun.Result `json:"results"`
	}{Config: c, Apps: []string{"app-0801"}}
	for _, arm := range TestbedArms {
		rec.Results = append(rec.Results, testbedResult(cellName("app-0801", arm), c.Episodes, 1, 0, 0, 0))
	}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, TestbedFile), b, 0o644))
	r := &Runner{Config: c}
	part, err := r.testbedPart(context.Background(), lab.Run{Dir: dir}, []string{"app-0801"})
	require.NoError(t, err)
	assert.True(t, part.Kept())
	require.NoError(t, lab.RunTestbed(context.Background(), lab.Run{Dir: dir}, part), "nothing to run: no testbed needed")
	got, err := r.testbedResults(dir, []string{"app-0801"})
	require.NoError(t, err, "the same configuration reads them back, with no testbed")
	assert.Len(t, got, 3)
	r.Config.Episodes++
	_, err = r.testbedPart(context.Background(), lab.Run{Dir: dir}, []string{"app-0801"})
	assert.ErrorContains(t, err, "another configuration")
	_, err = r.testbedResults(dir, []string{"app-0801"})
	assert.ErrorContains(t, err, "another configuration")
	_, err = (&Runner{Config: c}).testbedResults(t.TempDir(), []string{"app-0801"})
	assert.ErrorContains(t, err, "need a testbed")
}

// TestCadence: controller rounds of the acting stages per agent step,
// over an arm's cells; 0 (not measured) for an arm whose agents the
// runner checkpointed no acting step of.
func TestCadence(t *testing.T) {
	apps := []string{"a", "b"}
	res := func(steps, rounds int) testbedrun.Result {
		return testbedrun.Result{AgentSteps: steps, AgentRounds: rounds}
	}
	first := res(40, 53)
	first.Health.AwaitingFirst = 3 // the runner's reaction to the hand-over
	tb := map[[2]string]testbedrun.Result{
		{"a", AWARE}: res(60, 150), {"b", AWARE}: first,
		{"a", NoBoot}: res(100, 300), {"b", NoBoot}: res(0, 40), // no step checkpointed: counts nothing
	}
	for _, tc := range []struct {
		arm  string
		want float64
	}{{AWARE, 2}, {NoBoot, 3}} {
		assert.InDelta(t, tc.want, cadence(tc.arm, apps, tb), 1e-12, tc.arm)
	}
	tb[[2]string{"a", AWARE}], tb[[2]string{"b", AWARE}] = res(0, 200), res(0, 0)
	assert.Zero(t, cadence(AWARE, apps, tb), "not measured")
}

// TestAtCadence: the simulator's rerun of the agent arms as the testbed
// runs them uses the cells' seeds (run as the study does, it is the
// study's cell), differs from the study's cells, and is kept in the
// study's folder and reused.
func TestAtCadence(t *testing.T) {
	l := labtest.New(t)
	c := OnTestbed(false)
	c.Apps, c.Episodes, c.Records = 1, 9, 7 // 70 records: BCQ's minibatch
	c.Updates = c.Records * c.EpisodeSteps * RunnerOfflineUpdates
	apps, err := c.Draw(l)
	require.NoError(t, err)
	r := &Runner{Lab: l, Config: c}
	ctx := context.Background()
	tb := map[[2]string]testbedrun.Result{
		{apps[0], AWARE}:  {AgentSteps: 20, AgentRounds: 60},
		{apps[0], NoBoot}: {AgentSteps: 90, AgentRounds: 180},
	}
	dir := t.TempDir()
	cad, err := r.atCadence(ctx, dir, false, apps, tb)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{AWARE: 3, NoBoot: 2}, cad.Acts)
	for _, arm := range []string{AWARE, NoBoot} {
		run, err := r.Cell(ctx, study.Cell{Arm: arm, App: apps[0], Seed: c.Seed})
		require.NoError(t, err)
		want, err := run.Means(c.Records, c.Episodes)
		require.NoError(t, err)
		means := func(how asRun) lab.Means {
			env, err := l.Env(apps[0], 0, c.envOptions()...)
			require.NoError(t, err)
			eps, err := r.agentArm(ctx, apps[0], arm, env, c.Seed+cellSeed, how)
			require.NoError(t, err)
			var cv lab.Curve
			cv.Add(eps...)
			m, err := cv.Means(c.Records, c.Episodes)
			require.NoError(t, err)
			return m
		}
		assert.Equal(t, want, means(asRun{}), "%s: the cell's seeds", arm)
		assert.Equal(t, means(asRun{every: cad.Acts[arm], continuous: true}), cad.Outs[0].Acting[arm], "%s: the cell's seeds, as on the testbed", arm)
		assert.NotEqual(t, want, cad.Outs[0].Acting[arm], "%s: run as on the testbed", arm)
	}

	// Kept: a file of the same cadence is read back, not run again.
	b, err := os.ReadFile(filepath.Join(dir, CadenceFile))
	require.NoError(t, err)
	var kept Cadence
	require.NoError(t, json.Unmarshal(b, &kept))
	kept.Outs[0].Acting[AWARE] = lab.Means{Reward: -1}
	b, err = json.Marshal(kept)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, CadenceFile), b, 0o644))
	again, err := r.atCadence(ctx, dir, false, apps, tb)
	require.NoError(t, err)
	assert.Equal(t, -1.0, again.Outs[0].Acting[AWARE].Reward, "reused")
	tb[[2]string{apps[0], NoBoot}] = testbedrun.Result{AgentSteps: 90, AgentRounds: 270}
	other, err := r.atCadence(ctx, dir, false, apps, tb)
	require.NoError(t, err)
	assert.NotEqual(t, -1.0, other.Outs[0].Acting[AWARE].Reward, "run again at another cadence")
	none, err := r.atCadence(ctx, t.TempDir(), true, apps, tb)
	require.NoError(t, err)
	assert.True(t, none.NotRun, "rendering runs nothing")
	assert.Empty(t, none.Outs)
}
