package serving

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
	"github.com/aware-autoscaler/aware/generator"
)

// flat is a run of n episodes whose figures step from before to after at
// episode k.
func flat(n, k int, before, after lab.Means) Run {
	var r Run
	for i := range n {
		m := before
		if i >= k {
			m = after
		}
		r.Rewards = append(r.Rewards, m.Reward)
		r.SLOViolations = append(r.SLOViolations, int(m.SLOViolations))
		r.CPUUtil = append(r.CPUUtil, m.CPUUtil)
		r.MemoryUtil = append(r.MemoryUtil, m.MemoryUtil)
	}
	return r
}

func synthetic() (Config, study.Plan, []Run) {
	c := Config{Apps: 1, Scenarios: []string{"load-high", "file-sizes"}, Converged: 10, Before: 2, After: 6, Window: 2, ServingTolerance: 0.1, VarianceTolerance: 0.1, Seed: 1}
	plan := Plan(c, []Unit{{App: "app-0801", Scenario: "load-high"}, {App: "app-0802", Scenario: "file-sizes"}})
	good := lab.Means{Reward: 100, CPUUtil: 0.6, MemoryUtil: 0.5, SLOViolations: 1}
	bad := lab.Means{Reward: 50, CPUUtil: 0.3, MemoryUtil: 0.25, SLOViolations: 20}
	runs := make([]Run, len(plan))
	for i, cell := range plan {
		switch cell.Arm {
		case AWARE: // drops for 3 episodes, retrains, recovers
			runs[i] = flat(8, 2, good, bad)
			for e := 5; e < 8; e++ {
				runs[i].Rewards[e], runs[i].SLOViolations[e], runs[i].CPUUtil[e], runs[i].MemoryUtil[e] = 100, 1, 0.6, 0.5
			}
			runs[i].Stages = []string{"Serving", "Serving", "Serving", "Online", "Online", "Online", "Serving", "Serving"}
		case NoRetrain:
			runs[i] = flat(8, 2, good, bad)
		default:
			runs[i] = flat(8, 2, good, good)
		}
	}
	return c, plan, runs
}

func TestOutcomesKnownAnswers(t *testing.T) {
	c, plan, runs := synthetic()
	units, err := Outcomes(c, plan, runs)
	require.NoError(t, err)
	require.Len(t, units, 2)
	for _, u := range units {
		// After the switch AWARE has 3 bad and 3 good episodes.
		assert.InDelta(t, 75, u.After[AWARE].Reward, 1e-12)
		assert.InDelta(t, 50, u.After[NoRetrain].Reward, 1e-12)
		assert.InDelta(t, 10.5, u.After[AWARE].SLOViolations, 1e-12)
		assert.Equal(t, 3, u.Retraining)
	}
	assert.Equal(t, 3, runs[0].Retraining())
	_, err = Outcomes(c, plan[:3], runs[:3])
	assert.ErrorContains(t, err, "no converged cell")
}

func TestRenderGolden(t *testing.T) {
	c, plan, runs := synthetic()
	dir := t.TempDir()
	rep, err := Render(c, plan, runs, []string{"nasa: synthetic"}, study.DefaultBootstrap(), dir)
	require.NoError(t, err)
	assert.InDelta(t, 20/10.5, rep.Headlines[2].Ours.Value, 1e-12, "SLO violations, no retraining / AWARE")
	for _, f := range rep.Figures {
		assert.FileExists(t, filepath.Join(dir, f.File))
	}
	var b strings.Builder
	require.NoError(t, rep.Markdown(&b))
	labtest.Golden(t, "report.golden.md", b.String())
}

// TestRetrainingDetectorRetrains runs the arms for real on a small pool:
// under a quadrupled load the converged policy's reward falls, AWARE's
// detector takes it back to training, and the no-retraining arm serves the
// same episodes as AWARE until then.
func TestRetrainingDetectorRetrains(t *testing.T) {
	if testing.Short() {
		t.Skip("trains agents")
	}
	ctx := context.Background()
	l := labtest.New(t)
	p := labtest.Policies(t, l)
	c := Config{Apps: 1, Scenarios: []string{"load-high"}, Converged: 20, Before: 3, After: 10, Window: 2, ServingTolerance: 0.02, VarianceTolerance: 0.02, Seed: 1}
	require.NoError(t, c.Validate())
	units, err := c.Draw(l)
	require.NoError(t, err)
	require.Len(t, units, 1)
	assert.Contains(t, l.Split(generator.SplitTest), units[0].App)
	r := &Runner{Lab: l, Policies: p, Config: c}
	cells := Plan(c, units)
	aware, err := r.Cell(ctx, cells[0])
	require.NoError(t, err)
	frozen, err := r.Cell(ctx, cells[1])
	require.NoError(t, err)
	require.Equal(t, AWARE, cells[0].Arm)
	assert.Len(t, aware.Rewards, 13)
	assert.Equal(t, string(v1alpha1.StageServing), aware.Stages[0])
	first := -1
	for i, s := range aware.Stages {
		if s == string(v1alpha1.StageOnline) {
			first = i
			break
		}
	}
	require.Positive(t, first, "the detector never retrained: %v, rewards %v", aware.Stages, aware.Rewards)
	assert.Equal(t, frozen.Rewards[:first], aware.Rewards[:first], "the same policy on the same episodes until AWARE retrains")
	for _, arm := range []int{2, 3} {
		run, err := r.Cell(ctx, cells[arm])
		require.NoError(t, err)
		assert.Len(t, run.Rewards, 13, cells[arm].Arm)
	}
}
