package study

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWinRule: the verdicts on constructed units whose differences are
// known, the applications won counted on each application's means, and
// the errors.
func TestWinRule(t *testing.T) {
	b := DefaultBootstrap()
	const apps, per = 6, 3
	var groups [][]string
	rule, ruleSLO := make([]float64, apps*per), make([]float64, apps*per)
	for a := range apps {
		for k := range per {
			groups = append(groups, []string{fmt.Sprint("app-", a)})
			rule[a*per+k], ruleSLO[a*per+k] = 100+float64(k), 2
		}
	}
	// shift adds d, −0.1, 0 or 0.1 within each application, and ±spread
	// between applications (alternately): means d throughout.
	shift := func(xs []float64, d, spread float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x + d + 0.1*float64(i%per-1) + spread*float64(1-2*(i/per%2))
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		dr, ds    float64
		verdict   string
		appsShare float64
	}{
		{"more reward, fewer violations", 5, -1, "beats it", 1},
		{"more reward, as many violations", 5, 0, "more reward; SLO violations not shown to be at most its", 0.5},
		{"more reward bought with violations", 5, 3, "more reward, more SLO violations: no win", 0},
		{"less reward", -5, -1, "behind it", 0},
		{"as much reward, more violations", 0, 3, "behind it (more SLO violations)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reward, slo := shift(rule, tc.dr, 0), shift(ruleSLO, tc.ds, 0.5)
			w, err := b.WinRule("s", "agent", "all", reward, rule, slo, ruleSLO, groups)
			require.NoError(t, err)
			assert.Equal(t, tc.verdict, w.Verdict())
			assert.InDelta(t, tc.dr, w.RewardDiff.Value, 1e-9)
			assert.InDelta(t, tc.appsShare, w.Apps.Value, 1e-12)
			assert.Equal(t, apps, w.Apps.N, "applications, not units")
			assert.InDelta(t, 101+tc.dr, w.RewardIQM.Value, 1e-9, "the middle half of the units")
		})
	}
	// Ties: the same reward and no violations at all is no win and no loss.
	zero := make([]float64, len(rule))
	w, err := b.WinRule("s", "agent", "all", rule, rule, zero, zero, groups)
	require.NoError(t, err)
	assert.Equal(t, "no difference shown", w.Verdict())
	assert.InDelta(t, 1, w.Apps.Value, 1e-12, "at least its reward and at most its violations")

	_, err = b.WinRule("s", "agent", "all", nil, nil, nil, nil, nil)
	assert.ErrorIs(t, err, ErrNoData)
	_, err = b.WinRule("s", "agent", "all", rule, rule[:1], zero, zero, groups)
	assert.ErrorContains(t, err, "win rule for agent")
	assert.Equal(t, "not measured", Win{}.Verdict())

	tab := WinTable([]Win{w})
	require.Len(t, tab.Rows, 1)
	assert.Equal(t, "no difference shown", tab.Rows[0][len(tab.Columns)-1])
}
