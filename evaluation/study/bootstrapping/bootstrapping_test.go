package bootstrapping

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
)

func constant(n int, reward, slo, cpu, mem float64) Run {
	var r Run
	for range n {
		r.Rewards = append(r.Rewards, reward)
		r.SLOViolations = append(r.SLOViolations, int(slo))
		r.CPUUtil = append(r.CPUUtil, cpu)
		r.MemoryUtil = append(r.MemoryUtil, mem)
	}
	return r
}

func synthetic() (Config, study.Plan, []Run) {
	c := Config{Apps: 2, Episodes: 10, Records: 4, Updates: 10, Converged: 20, Seed: 1}
	plan := Plan(c, []string{"app-0801", "app-0802"})
	runs := make([]Run, len(plan))
	for i, cell := range plan {
		switch cell.Arm {
		case AWARE:
			runs[i] = constant(10, 120, 2, 0.5, 0.4)
		case NoBoot:
			runs[i] = constant(10, 60, 30, 0.25, 0.1)
		default:
			runs[i] = constant(10, 130, 1, 0.45, 0.5)
		}
	}
	return c, plan, runs
}

func TestRenderGoldenAndKnownRatios(t *testing.T) {
	c, plan, runs := synthetic()
	dir := t.TempDir()
	rep, err := Render(c, plan, runs, []string{"nasa: synthetic"}, study.DefaultBootstrap(), dir)
	require.NoError(t, err)
	want := []float64{2, 4, 15, 2}
	// Against the paper's 1.475, 1.392, 16.9 and 1.473.
	verdicts := []string{"beyond the paper's size", "beyond the paper's size", "same direction, smaller", "beyond the paper's size"}
	for i, h := range rep.Headlines {
		assert.InDelta(t, want[i], h.Ours.Value, 1e-12, h.Figure)
		assert.Equal(t, verdicts[i], h.Verdict(), h.Figure)
	}
	for _, f := range rep.Figures {
		assert.FileExists(t, filepath.Join(dir, f.File))
	}
	var b strings.Builder
	require.NoError(t, rep.Markdown(&b))
	labtest.Golden(t, "report.golden.md", b.String())
	_, err = Outcomes(c, plan[:2], runs[:2])
	assert.ErrorContains(t, err, "no rule-based cell")
}

// TestArmsRun runs every arm on one application of a small pool: the
// bootstrapped arm's first episodes are the rule-based autoscaler's own
// (the same seeds), then its agent acts.
func TestArmsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains agents")
	}
	ctx := context.Background()
	l := labtest.New(t)
	p := labtest.Policies(t, l)
	c := Config{Apps: 1, Episodes: 6, Records: 2, Updates: 50, Converged: 3, Seed: 1}
	require.NoError(t, c.Validate())
	apps, err := c.Draw(l)
	require.NoError(t, err)
	r := &Runner{Lab: l, Policies: p, Config: c}
	runs := map[string]Run{}
	for _, cell := range Plan(c, apps) {
		run, err := r.Cell(ctx, cell)
		require.NoError(t, err, cell.Arm)
		assert.Len(t, run.Rewards, 6, cell.Arm)
		runs[cell.Arm] = run
	}
	assert.Equal(t, runs[Rule].Rewards[:2], runs[AWARE].Rewards[:2], "OFFLINE: the rule-based autoscaler acts")
	assert.NotEqual(t, runs[Rule].Rewards[2:], runs[AWARE].Rewards[2:], "then the agent acts")
	assert.Error(t, Config{Apps: 1, Episodes: 2, Records: 2, Updates: 1, Converged: 1}.Validate())
}

// TestExtraArmsRun runs every extra arm on one application of a small pool
// (4 episodes, 2 recorded; moved from the removed `aware bootstrap`'s
// test): the arms, their shared records and the report's ablation
// tables, not what bootstrapping achieves (issue 16's measurements).
func TestExtraArmsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains agents")
	}
	ctx := context.Background()
	l := labtest.New(t)
	c, err := Config{Apps: 1, Episodes: 4, Records: 2, Updates: 70, Converged: 2, Seed: 1}.WithArms([]string{BCQArm(0), "all"}, 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"BCQ-phi0", "BCQ-phi0.05", OfflineDDPG, PPO, PPOFitted}, c.Extra)
	apps, err := c.Draw(l)
	require.NoError(t, err)
	plan := Plan(c, apps)
	require.Len(t, plan, len(Arms)+5)
	r := &Runner{Lab: l, Policies: labtest.Policies(t, l), Config: c}
	runs := make([]Run, len(plan))
	byArm := map[string]Run{}
	for i, cell := range plan {
		runs[i], err = r.Cell(ctx, cell)
		require.NoError(t, err, cell.Arm)
		require.Len(t, runs[i].Rewards, 4, cell.Arm)
		byArm[cell.Arm] = runs[i]
	}
	rule := byArm[Rule]
	for _, arm := range []string{BCQArm(0), BCQArm(0.05), OfflineDDPG, PPOFitted} {
		assert.Equal(t, rule.Rewards[:2], byArm[arm].Rewards[:2], "%s: HPA+VPA acted while OFFLINE", arm)
	}
	for _, arm := range []string{BCQArm(0), BCQArm(0.05), OfflineDDPG} {
		assert.NotZero(t, byArm[arm].OfflineMeanQ, "%s trained offline", arm)
	}
	assert.Equal(t, byArm[AWARE].Curve, byArm[BCQArm(0)].Curve, "AWARE-bootstrapped is BCQ at Φ = 0")
	assert.Zero(t, byArm[AWARE].OfflineMeanQ, "the registered arms' cells are as before")
	assert.Nil(t, byArm[PPO].Fit)
	fit := byArm[PPOFitted].Fit
	require.NotNil(t, fit)
	assert.Len(t, fit.SimRewards, 3)
	assert.Positive(t, fit.HeldBack.CPURows, "the fit is measured on held-back records")
	assert.InEpsilon(t, fit.TrueCPU, fit.Fitted.Model.CPU, 0.2, "the fitted CPU per request")

	rep, err := Render(c, plan, runs, l.Traces(), study.DefaultBootstrap(), t.TempDir())
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, rep.Markdown(&b))
	md := b.String()
	t.Log(md)
	for _, want := range []string{"| " + PPOFitted + " | 3 |", "| " + PPO + " | 1 |", "| " + apps[0] + " |", "| BCQ-phi0.05 |"} {
		assert.Contains(t, md, want)
	}
	assert.Contains(t, md, fmt.Sprintf("| T_online: rule-based over the 2 recorded episodes | – | %.3g [", (rule.Rewards[0]+rule.Rewards[1])/2),
		"T_online is the fallback's reward over the records")
}

func TestExtraArmsRefused(t *testing.T) {
	base := Config{Apps: 1, Episodes: 4, Records: 2, Updates: 70, Converged: 2, Seed: 1}
	for _, tc := range []struct {
		arms []string
		sim  int
		want string
	}{
		{[]string{"nope"}, 0, `no arm "nope"`},
		{[]string{"BCQ-phi-1"}, 0, "a number in [0, 2]"},
		{[]string{"BCQ-phi3"}, 0, "a number in [0, 2]"},
		{[]string{"BCQ-phi0.050"}, 0, "written as BCQ-phi0.05"},
		{[]string{PPO, PPO}, 0, "arm PPO given twice"},
		{[]string{AWARE}, 0, "no arm"},
		{[]string{PPO}, 10, "only the PPO-fitted arm trains in one"},
		{[]string{PPOFitted}, -1, "positive with the PPO-fitted arm"},
	} {
		_, err := base.WithArms(tc.arms, tc.sim)
		assert.ErrorContains(t, err, tc.want, tc.arms)
	}
	c, err := base.WithArms(nil, 0)
	require.NoError(t, err)
	assert.Equal(t, base, c, "no arms: the registered study")
	c, err = base.WithArms([]string{PPOFitted}, 0)
	require.NoError(t, err)
	assert.Equal(t, DefaultSimEpisodes, c.SimEpisodes)
	assert.Greater(t, c.Cost([]string{"a"}), base.Cost([]string{"a"}))
}
