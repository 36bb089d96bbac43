package serving_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/serving"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/testbed"
	"github.com/aware-autoscaler/aware/testbed/testbedtest"
)

// TestStudyOnTheTestbed runs a small serving study on a local testbed
// brought up for it (1 application under load-high × 3 arms as MPAs, the
// agents started SERVING from the policy converged on the simulator, 3
// episodes of 6 steps before the switch and 5 after, on the default
// clock) and the same cells on the simulator. It fails if the testbed's
// figures are not the ones the testbed's InfluxDB holds (read here with
// InfluxQL, not through the study's code), if a stage change the
// controller counted is missing from the report, if an agent did not
// start SERVING from its initial policy, if the frozen agent left
// SERVING, if the scenario did not hit as the episode after the records
// began, or if a step was lost. Rounds missed and stale actions depend on
// the machine's load: they are reported (the CLI exits non-zero on them).
func TestStudyOnTheTestbed(t *testing.T) {
	if testing.Short() {
		t.Skip("stands up a local testbed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	clock := testbedrun.DefaultClock()
	d := testbedtest.LocalDriver(ctx, t, tmp)
	cfg := testbed.DefaultConfig()
	cfg.Apps, cfg.Options.Step, cfg.TimeScale = 1, clock.Wall(), clock.Speedup
	t.Cleanup(func() { _ = d.Down(context.Background()) })
	_, ep, err := d.Up(ctx, cfg)
	require.NoError(t, err)
	bed, err := testbedrun.Attach(ctx, d.Dir)
	require.NoError(t, err)
	// The testbed's own application has entered its stage, so that the
	// counter moves by the study's MPAs alone from here on.
	require.Eventually(t, func() bool {
		return len(testbedtest.Transitions(ctx, t, ep.Controller)) > 0
	}, 2*time.Minute, time.Second, "the testbed's own MPA has no stage")
	before := testbedtest.Transitions(ctx, t, ep.Controller)

	lc := lab.DefaultConfig()
	lc.Traces = filepath.Join(tmp, "no-traces")
	l, err := lab.New(lc)
	require.NoError(t, err)
	pol, err := lab.OpenPolicies(filepath.Join(tmp, "policies"), l)
	require.NoError(t, err)
	c := serving.OnTestbed(false)
	c.Testbed.Clock = clock
	c.Apps, c.Scenarios, c.Converged, c.Before, c.After, c.EpisodeSteps, c.Window = 1, []string{"load-high"}, 30, 3, 5, 6, 3
	dir := filepath.Join(tmp, "out", serving.Name)
	rep, err := serving.Execute(ctx, lab.Run{Lab: l, Policies: pol, Dir: dir, Shard: study.All, Workers: 2, Progress: testbedtest.LogWriter{T: t},
		Bootstrap: study.DefaultBootstrap(), Testbed: bed}, c)
	if md, rerr := os.ReadFile(filepath.Join(dir, "report.md")); rerr == nil {
		t.Log(string(md))
	}
	if errors.Is(err, lab.ErrIncomplete) {
		t.Logf("on this machine's load: %v", err)
		err = nil
	}
	require.NoError(t, err)
	after := testbedtest.Transitions(ctx, t, ep.Controller)

	var rec struct {
		Results []testbedrun.Result `json:"results"`
	}
	b, err := os.ReadFile(filepath.Join(dir, lab.TestbedFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rec))
	require.Len(t, rec.Results, 3)
	n := c.Before + c.After
	reported := map[string]float64{}
	for _, r := range rec.Results {
		app := strings.TrimPrefix(r.Source[strings.Index(r.Source, "series app="):], "series app=")
		require.True(t, strings.HasPrefix(app, "aware-study-"+serving.Name+"-"), r.Source)
		want := testbedtest.EpisodeRewards(ctx, t, ep.InfluxDB, app)
		require.GreaterOrEqual(t, len(want), n, r.Cell)
		require.Len(t, r.Episodes, n, r.Cell)
		for i, e := range r.Episodes {
			assert.InDelta(t, want[i], e.Reward, 1e-9, "%s episode %d: the reward is not the stored one", r.Cell, i)
			assert.Equal(t, c.EpisodeSteps, e.Steps)
		}
		assert.Zero(t, r.Health.LostSteps, "%s: %+v", r.Cell, r.Health)
		require.NotNil(t, r.Injected, "%s: where the scenario hit", r.Cell)
		assert.Equal(t, c.Before, r.Injected.Episode, "%s: the scenario hit in episode %d step %d", r.Cell, r.Injected.Episode, r.Injected.Step)
		assert.LessOrEqual(t, r.Injected.Step, 1, "%s: the scenario hit late in its episode", r.Cell)
		for _, s := range r.Stages {
			reported[s.From+"→"+s.To]++
			assert.NotEmpty(t, s.Reason, "%s: %s → %s without the controller's Event", r.Cell, s.From, s.To)
		}
		require.NotEmpty(t, r.Stages, r.Cell)
		first := [3]string{r.Stages[0].From, r.Stages[0].To, r.Stages[0].Reason}
		switch {
		case strings.HasSuffix(r.Cell, "-rule"):
			assert.Equal(t, [3]string{"Initialized", "Online", "NoBootstrapping"}, first, r.Cell)
			assert.Len(t, r.Stages, 1, "%s: HPA+VPA's MPA stays Online", r.Cell)
		case strings.HasSuffix(r.Cell, "-frozen"):
			assert.Len(t, r.Stages, 1, "%s: the frozen agent never leaves SERVING", r.Cell)
			fallthrough
		default:
			assert.Equal(t, [3]string{"Initialized", "Serving", "StartServing"}, first, "%s: starts SERVING", r.Cell)
			assert.Positive(t, r.AgentSteps, "%s: the runner acted for it (its initial policy loaded)", r.Cell)
		}
	}
	assert.Equal(t, testbedtest.Since(before, after), reported, "stage changes counted by the controller (its aware_controller_stage_transitions_total) against the report")

	var md strings.Builder
	require.NoError(t, rep.Markdown(&md))
	for _, want := range []string{"Testbed vs simulator, the 5 episodes after the switch", "Testbed vs simulator, the 3 episodes before the switch", "Lifecycle on the testbed", "Initialized → Serving (StartServing)", "Where the scenario hit on the testbed", "rounds missed"} {
		assert.Contains(t, md.String(), want)
	}
}
