package alpha

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
)

// flat is a curve of n episodes with the same figures.
func flat(n int, reward, cpu, mem float64, slo int) lab.Curve {
	var c lab.Curve
	for range n {
		c.Rewards = append(c.Rewards, reward)
		c.SLOViolations = append(c.SLOViolations, slo)
		c.CPUUtil = append(c.CPUUtil, cpu)
		c.MemoryUtil = append(c.MemoryUtil, mem)
	}
	return c
}

// synthetic is a study whose figures are known: on both applications the
// rule-based autoscaler uses 0.5 + 0.5 at 2 violations per episode and
// earns 130; α = 0.3 uses 30 % more at 6 violations, α = 0.5 20 % more at
// 2, α = 0.9 10 % less at 0, the constrained agent 25 % more at 1.
func synthetic() (Config, study.Plan, []Run) {
	c := Config{Apps: 2, Alphas: []float64{0.3, 0.5, 0.9}, Episodes: 4, Eval: 3, Calibration: 2, BudgetFloor: 0.005, LR: 2, Max: 10, Seed: 1}
	plan := Plan(c, []string{"app-0801", "app-0802"})
	runs := make([]Run, len(plan))
	for i, cell := range plan {
		var r Run
		switch cell.Arm {
		case Rule:
			r.Eval = flat(3, 130, 0.5, 0.5, 2)
		case alphaArm(0.3):
			r.Eval = flat(3, 120, 0.65, 0.65, 6)
		case alphaArm(0.5):
			r.Eval = flat(3, 135, 0.6, 0.6, 2)
		case alphaArm(0.9):
			r.Eval = flat(3, 128, 0.45, 0.45, 0)
		case Constrained:
			r.Eval = flat(3, 140, 0.625, 0.625, 1)
			r.Budget, r.Lambda = 0.02, 1.5
		}
		r.Training = flat(4, 100, 0.5, 0.5, 3)
		runs[i] = r
	}
	return c, plan, runs
}

func TestRenderKnownAnswers(t *testing.T) {
	c, plan, runs := synthetic()
	dir := t.TempDir()
	rep, err := Render(c, plan, runs, []string{"nasa: synthetic"}, study.DefaultBootstrap(), dir)
	require.NoError(t, err)
	var against study.Table
	for _, tab := range rep.Tables {
		if strings.HasPrefix(tab.Title, "Against the tuned rule-based") {
			against = tab
		}
	}
	rows := map[string][]string{}
	for _, r := range against.Rows {
		rows[r[0]] = r
	}
	// α = 0.5: exactly 20 % more at as many violations meets the target.
	assert.Equal(t, []string{"DDPG-a0.5", "0.2 [0.2, 0.2]", "0 [0, 0]", "2 of 2", "2 of 2"}, rows[alphaArm(0.5)])
	assert.Equal(t, []string{"DDPG-a0.3", "0.3 [0.3, 0.3]", "4 [4, 4]", "0 of 2", "0 of 2"}, rows[alphaArm(0.3)], "more util bought with violations")
	assert.Equal(t, "0 of 2", rows[alphaArm(0.9)][3], "fewer violations, less util")
	assert.Equal(t, "2 of 2", rows[Constrained][3])
	wins := map[string]string{}
	for _, w := range rep.Wins {
		wins[w.Arm] = w.Verdict()
	}
	assert.Equal(t, map[string]string{alphaArm(0.3): "behind it", alphaArm(0.5): "beats it", alphaArm(0.9): "behind it", Constrained: "beats it"}, wins)
	for _, f := range rep.Figures {
		assert.FileExists(t, filepath.Join(dir, f.File))
	}
	var b strings.Builder
	require.NoError(t, rep.Markdown(&b))
	labtest.Golden(t, "report.golden.md", b.String())

	// A missing cell is named.
	_, err = Outcomes(c, plan[:len(plan)-1], runs[:len(runs)-1])
	assert.ErrorContains(t, err, "app-0802: no rule-based cell")
}

func TestConfig(t *testing.T) {
	for _, c := range []Config{Quick(), Full()} {
		require.NoError(t, c.Validate())
	}
	assert.Equal(t, []string{"DDPG-a0.3", "DDPG-a0.5", "DDPG-a0.7", "DDPG-a0.9", Constrained, Rule}, Quick().Arms())
	a, ok := parseAlpha("DDPG-a0.7")
	assert.True(t, ok)
	assert.Equal(t, 0.7, a)
	_, ok = parseAlpha(Constrained)
	assert.False(t, ok)
	for _, bad := range []func(*Config){
		func(c *Config) { c.Alphas = []float64{0.5, 0.5} },
		func(c *Config) { c.Alphas = []float64{1.5} },
		func(c *Config) { c.Alphas = nil },
		func(c *Config) { c.LR = 0 },
		func(c *Config) { c.Apps = 1 },
	} {
		c := Quick()
		bad(&c)
		assert.Error(t, c.Validate(), "%+v", c)
	}
}

// TestExecute runs a tiny study: the α = 0.5 arm takes the shared policy,
// the constrained agent's budget is the rule-based autoscaler's share of
// violating steps (at least the floor) and its multiplier is kept.
func TestExecute(t *testing.T) {
	if testing.Short() {
		t.Skip("trains agents")
	}
	ctx := context.Background()
	l := labtest.New(t)
	p := labtest.Policies(t, l)
	c := Config{Apps: 2, Alphas: []float64{0.5, 0.9}, Episodes: 3, Eval: 2, Calibration: 2, BudgetFloor: 0.005, LR: 2, Max: 10, Seed: 1}
	dir := t.TempDir()
	rep, err := Execute(ctx, lab.Run{Lab: l, Policies: p, Dir: dir, Workers: 2, Bootstrap: study.DefaultBootstrap()}, c)
	require.NoError(t, err)
	assert.Len(t, rep.Wins, 3)
	var res study.Results[Run]
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	require.Len(t, res.Cells, 2*4)
	for _, cell := range res.Cells {
		r := cell.Result
		assert.Equal(t, c.Eval, r.Eval.Len(), cell.Cell.Key())
		switch cell.Cell.Arm {
		case Rule:
			assert.Zero(t, r.Training.Len())
		case Constrained:
			assert.GreaterOrEqual(t, r.Budget, c.BudgetFloor)
			assert.GreaterOrEqual(t, r.Lambda, 0.0)
			assert.Equal(t, c.Episodes, r.Training.Len())
		case alphaArm(0.5):
			tr, _, err := p.Get(ctx, lab.Policy{App: cell.Cell.App, Seed: c.Seed, Episodes: c.Episodes})
			require.NoError(t, err)
			assert.Equal(t, tr.Training, r.Training, "the shared policy")
		}
	}
}
