package bootstrapping

import (
	"context"
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
	for i, h := range rep.Headlines {
		assert.InDelta(t, want[i], h.Ours.Value, 1e-12, h.Figure)
		assert.Equal(t, "same direction", h.Verdict(), h.Figure)
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
