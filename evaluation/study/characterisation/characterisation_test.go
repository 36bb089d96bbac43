package characterisation

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
	"github.com/aware-autoscaler/aware/evaluation/train"
)

// recovering is a run that starts at lo and climbs by step per episode to
// hi.
func recovering(n int, lo, hi, step float64) Run {
	var r Run
	v := lo
	for range n {
		r.Rewards = append(r.Rewards, v)
		r.SLOViolations = append(r.SLOViolations, 3)
		r.CPUUtil = append(r.CPUUtil, 0.4)
		r.MemoryUtil = append(r.MemoryUtil, 0.3)
		v = min(hi, v+step)
	}
	return r
}

func synthetic() (Config, study.Plan, []Run) {
	c := Config{Apps: 2, Scenarios: []string{"load-high"}, Converged: 10, Early: 4, Episodes: 12, Rule: train.ConvergenceRule{Window: 2, Tolerance: 0.01}, Seed: 1}
	plan := Plan(c, []string{"app-0801", "app-0802"}, []lab.Affected{{App: "app-0801", Scenario: "load-high"}})
	runs := make([]Run, len(plan))
	for i, cell := range plan {
		switch cell.Arm {
		case NewApp: // 50 → 100 by 10: drop of the first 2 episodes (50, 60) vs 100 is 45 %
			runs[i] = recovering(12, 50, 100, 10)
			runs[i].Before, runs[i].Target = 110, 100
		case Scenario: // 80 → 90 by 5: drop (80, 85) vs 100 is 17.5 %, steady state 90
			runs[i] = recovering(12, 80, 90, 5)
			runs[i].Before = 100
		case EarlyAgent:
			runs[i] = recovering(4, 40, 40, 0)
			runs[i].SLOViolations = []int{30, 30, 30, 30}
		case EarlyRule:
			runs[i] = recovering(4, 100, 100, 0)
			runs[i].CPUUtil = []float64{0.5, 0.5, 0.5, 0.5}
		}
	}
	return c, plan, runs
}

func TestChangesKnownAnswers(t *testing.T) {
	c, plan, runs := synthetic()
	chs, err := Changes(c, plan, runs)
	require.NoError(t, err)
	require.Len(t, chs, 3)
	for _, ch := range chs[:2] {
		assert.Equal(t, NewApp, ch.Cell.Arm)
		assert.InDelta(t, 0.45, ch.Drop, 1e-12)
		assert.InDelta(t, 100, ch.Reference, 1e-12)
		// 50 60 70 80 90 100 100: the 2-mean ≥ 99 from the window ending at episode 7.
		assert.Equal(t, 7, ch.Episodes)
	}
	s := chs[2]
	assert.InDelta(t, 0.175, s.Drop, 1e-12)
	assert.InDelta(t, 90, s.Reference, 1e-12)
	// 80 85 90 90: the 2-mean ≥ 89.1 from the window ending at episode 4.
	assert.Equal(t, 4, s.Episodes)
}

func TestRenderGolden(t *testing.T) {
	c, plan, runs := synthetic()
	dir := t.TempDir()
	rep, err := Render(c, plan, runs, []string{"nasa: synthetic"}, study.DefaultBootstrap(), dir)
	require.NoError(t, err)
	assert.InDelta(t, 55.0/100, rep.Headlines[0].Ours.Value, 1e-12)
	assert.InDelta(t, 82.5/100, rep.Headlines[1].Ours.Value, 1e-12)
	assert.InDelta(t, 0.8, rep.Headlines[2].Ours.Value, 1e-12, "early CPU util 0.4 / 0.5")
	assert.InDelta(t, 10, rep.Headlines[4].Ours.Value, 1e-12, "early SLO violations 30 / 3")
	for _, f := range rep.Figures {
		assert.FileExists(t, filepath.Join(dir, f.File))
	}
	var b strings.Builder
	require.NoError(t, rep.Markdown(&b))
	labtest.Golden(t, "report.golden.md", b.String())
}

// TestCellsRun runs each kind of cell on a small pool.
func TestCellsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains agents")
	}
	ctx := context.Background()
	l := labtest.New(t)
	p := labtest.Policies(t, l)
	c := Config{Apps: 2, Scenarios: []string{"load-low"}, Converged: 4, Early: 3, Episodes: 3, Rule: train.ConvergenceRule{Window: 2, Tolerance: 0.05}, Seed: 1}
	require.NoError(t, c.Validate())
	apps, units, err := c.Draw(l)
	require.NoError(t, err)
	r := &Runner{Lab: l, Policies: p, Config: c, Apps: apps}
	plan := Plan(c, apps, units)
	runs := make([]Run, len(plan))
	for i, cell := range plan {
		runs[i], err = r.Cell(ctx, cell)
		require.NoError(t, err, cell.Key())
	}
	assert.NotZero(t, runs[0].Target, "a move knows the new application's converged reward")
	_, err = Render(c, plan, runs, l.Traces(), study.DefaultBootstrap(), t.TempDir())
	require.NoError(t, err)
	_, err = r.Cell(ctx, study.Cell{Arm: "nope", App: apps[0]})
	assert.ErrorContains(t, err, `unknown kind of cell "nope"`)
}
