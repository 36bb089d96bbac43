package bootstrapping_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/bootstrapping"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/testbed"
	"github.com/aware-autoscaler/aware/testbed/testbedtest"
)

// TestStudyOnTheTestbed runs a small bootstrapping study on a local
// testbed brought up for it (2 applications × 3 arms as MPAs, 4 episodes of
// 22 steps, 3 recorded, on the default clock) and the same cells on the simulator. It
// fails if the testbed's figures are not the ones the testbed's InfluxDB
// holds (read here with InfluxQL over HTTP, not through the study's code),
// if a stage change the controller counted (its
// aware_controller_stage_transitions_total) is missing from the report, if
// the bootstrapped MPAs did not hand over after the records, or if a step
// was lost. Rounds missed and stale actions depend on the machine's load
// (other packages' control planes run beside it in make test): they are
// reported, and the CLI exits non-zero on them, but the test does not
// depend on them.
func TestStudyOnTheTestbed(t *testing.T) {
	if testing.Short() {
		t.Skip("stands up a local testbed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	clock := testbedrun.DefaultClock()
	if k, err := strconv.ParseFloat(os.Getenv("AWARE_TEST_SPEEDUP"), 64); err == nil {
		clock.Speedup = k // measuring another speed-up
	}
	d := testbedtest.LocalDriver(ctx, t, tmp)
	cfg := testbed.DefaultConfig()
	cfg.Apps, cfg.Options.Step, cfg.TimeScale = 1, clock.Wall(), clock.Speedup
	t.Cleanup(func() { _ = d.Down(context.Background()) })
	_, ep, err := d.Up(ctx, cfg)
	require.NoError(t, err)
	bed, err := testbedrun.Attach(ctx, d.Dir)
	require.NoError(t, err)
	require.NoError(t, bed.Check(clock))

	metric := func(re *regexp.Regexp) [][]string {
		body, err := testbedtest.Get(ctx, ep.Controller)
		require.NoError(t, err)
		return re.FindAllStringSubmatch(body, -1)
	}
	// The testbed's own application has entered its stage (it stays there:
	// its 100-step episodes take minutes), so that the counter moves by
	// the study's MPAs alone from here on.
	require.Eventually(t, func() bool {
		return len(metric(regexp.MustCompile(`(?m)^aware_controller_agent_stage\{name="[^"]*",namespace="aware-apps",stage="[^"]*"\} 1$`))) == 1
	}, 2*time.Minute, time.Second, "the testbed's own MPA has no stage")
	before := testbedtest.Transitions(ctx, t, ep.Controller)

	l, err := lab.New(labConfig(t))
	require.NoError(t, err)
	pol, err := lab.OpenPolicies(filepath.Join(tmp, "policies"), l)
	require.NoError(t, err)
	c := bootstrapping.OnTestbed(false)
	c.Testbed.Clock = clock
	c.Apps, c.Episodes, c.Records, c.EpisodeSteps, c.Converged = 2, 4, 3, 22, 5 // 66 records: BCQ trains on 64 at once
	c.Updates = c.Records * c.EpisodeSteps * bootstrapping.RunnerOfflineUpdates
	dir := filepath.Join(tmp, "out", bootstrapping.Name)
	rep, err := bootstrapping.Execute(ctx, lab.Run{Lab: l, Policies: pol, Dir: dir, Shard: study.All, Workers: 2, Progress: testbedtest.LogWriter{T: t},
		Bootstrap: study.DefaultBootstrap(), Testbed: bed}, c)
	if md, rerr := os.ReadFile(filepath.Join(dir, "report.md")); rerr == nil {
		t.Log(string(md))
	}
	if errors.Is(err, lab.ErrIncomplete) {
		// Rounds missed on a machine busy with other tests' control planes
		// (make test runs packages two at a time) are the machine's load,
		// which a test must not depend on; the report holds them and the
		// CLI exits non-zero on them. Everything below still holds.
		t.Logf("on this machine's load: %v", err)
		err = nil
	}
	require.NoError(t, err)
	after := testbedtest.Transitions(ctx, t, ep.Controller)

	var rec struct {
		Results []testbedrun.Result `json:"results"`
	}
	b, err := os.ReadFile(filepath.Join(dir, bootstrapping.TestbedFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rec))
	require.Len(t, rec.Results, 6)

	// The figures are InfluxDB's: each cell's episode rewards are the sums
	// of its stored steps' rewards, read here without the study's code.
	checkpointed := 0
	for _, r := range rec.Results {
		app := strings.TrimPrefix(r.Source[strings.Index(r.Source, "series app="):], "series app=")
		require.True(t, strings.HasPrefix(app, "aware-study-"+bootstrapping.Name+"-"), r.Source)
		want := testbedtest.EpisodeRewards(ctx, t, ep.InfluxDB, app)
		require.GreaterOrEqual(t, len(want), c.Episodes, r.Cell)
		require.Len(t, r.Episodes, c.Episodes, r.Cell)
		for i, e := range r.Episodes {
			assert.InDelta(t, want[i], e.Reward, 1e-9, "%s episode %d: the reward is not the stored one", r.Cell, i)
			assert.Equal(t, c.EpisodeSteps, e.Steps)
		}
		assert.True(t, strings.HasPrefix(r.Source, ep.InfluxDB+", database aware"), r.Source)
		assert.Zero(t, r.Health.LostSteps, "%s: %+v", r.Cell, r.Health)
		assert.Equal(t, c.Episodes*c.EpisodeSteps, r.Health.Records, "%s: the records of the cell's episodes", r.Cell)
		// The runner's checkpointed acting steps each took a controller
		// round at least (none for the rule-based cells, which it does not
		// host).
		assert.GreaterOrEqual(t, r.AgentRounds, r.AgentSteps, r.Cell)
		if strings.HasSuffix(r.Cell, "-rule") {
			assert.Zero(t, r.AgentSteps, r.Cell)
		}
		if strings.HasSuffix(r.Cell, "-cold") {
			checkpointed += r.AgentSteps
		}
	}
	// The cold agents act for all 88 rounds, a runner episode (22 steps)
	// taking about 46: their steps are read from the runner's checkpoints.
	assert.Positive(t, checkpointed, "no cold agent's acting steps read from the runner's checkpoints")

	// Every stage change the controller counted is in the report, each
	// with the controller's reason, and the bootstrapped MPAs handed over
	// after the records.
	reported := map[string]float64{}
	handovers := 0
	for _, r := range rec.Results {
		for _, s := range r.Stages {
			reported[s.From+"→"+s.To]++
			assert.NotEmpty(t, s.Reason, "%s: %s → %s without the controller's Event", r.Cell, s.From, s.To)
			if s.To == "Online" && s.From == "Offline" {
				handovers++
				assert.Equal(t, c.Records, s.Episode, "%s handed over before episode %d", r.Cell, s.Episode)
			}
		}
	}
	counted := testbedtest.Since(before, after)
	assert.Equal(t, counted, reported, "stage changes counted by the controller (its aware_controller_stage_transitions_total) against the report")
	assert.Equal(t, c.Apps, handovers)

	var md strings.Builder
	require.NoError(t, rep.Markdown(&md))
	for _, want := range []string{"Testbed vs simulator, all 4 episodes", "Testbed vs simulator, episodes 4–4", "Lifecycle on the testbed", "Offline → Online (RewardReachedOnline)", "rounds missed"} {
		assert.Contains(t, md.String(), want)
	}
}

func labConfig(t *testing.T) lab.Config {
	c := lab.DefaultConfig()
	c.Traces = filepath.Join(t.TempDir(), "no-traces")
	return c
}
