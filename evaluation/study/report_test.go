package study

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "go test -update writes it")
	assert.Equal(t, string(want), got)
}

func TestReportRendering(t *testing.T) {
	var b strings.Builder
	tbl := Table{
		Title:   "Adaptation: episodes to converge",
		Columns: []string{"arm", "episodes (95 % CI)", "CPU-s training"},
		Rows: [][]string{
			{"AWARE", Estimate{Value: 12.4, Lo: 9.8, Hi: 15.1, N: 40}.String(), "310"},
			{"TL", Estimate{Value: 61.5, Lo: 52, Hi: 70.25, N: 40}.String(), "1.54e+03"},
			{"rule-based (HPA+VPA, tuned)", "–", "0"},
			{"a|b"},
		},
		Notes: []string{"Converged: the reward's moving mean over 10 episodes within 2 % of the converged policy's."},
	}
	require.NoError(t, tbl.Markdown(&b))
	hs := []Headline{
		{Study: "adaptation", Figure: "episodes to converge, TL / AWARE", Ours: Estimate{Value: 4.96, Lo: 3.9, Hi: 6.2, N: 40}, Paper: 5.5},
		{Study: "serving", Figure: "SLO violations, no retraining / AWARE", Ours: Estimate{Value: 1.2, Lo: 0.8, Hi: 1.7, N: 21}, Paper: 2.1},
		{Study: "bootstrapping", Figure: "SLO violations, rule-based / AWARE", Ours: Estimate{Value: 0.7, Lo: 0.5, Hi: 0.9, N: 10}, Paper: 1.4},
		{Study: "characterisation", Figure: "episodes to re-converge", Ours: Estimate{}},
	}
	require.NoError(t, HeadlineTable(hs).Markdown(&b))
	golden(t, "report.golden.md", b.String())

	assert.Equal(t, "reaches the paper's size", hs[0].Verdict())
	assert.Equal(t, "inconclusive (interval holds 1)", hs[1].Verdict())
	assert.Equal(t, "reversed", hs[2].Verdict())

	err := Table{Title: "x", Columns: []string{"a"}, Rows: [][]string{{"1", "2"}}}.Markdown(&b)
	assert.ErrorContains(t, err, `table "x": a row of 2 cells under 1 columns`)
}

func TestResultsJSON(t *testing.T) {
	p := plan()[:2]
	path := filepath.Join(t.TempDir(), "results.json")
	meta := Meta{Study: "adaptation", Mode: "quick", Commit: Commit(), Seeds: []uint64{1, 2}, Traces: []string{"synthetic"},
		Command: "aware study adaptation --quick", Started: time.Unix(0, 0).UTC(), Finished: time.Unix(60, 0).UTC()}
	require.NoError(t, WriteResults(path, meta, p, []result{{Episodes: 3}, {Episodes: 5}}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var got Results[result]
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, meta, got.Meta)
	require.Len(t, got.Cells, 2)
	assert.Equal(t, p[1], got.Cells[1].Cell)
	assert.Equal(t, 5, got.Cells[1].Result.Episodes)
	assert.NotEqual(t, "unknown", meta.Commit, "tests run in the checkout")
	assert.ErrorContains(t, WriteResults(path, meta, p, []result{{}}), "1 results for 2 cells")
}

func TestVerdictWithMagnitude(t *testing.T) {
	est := func(lo, hi float64) Estimate { return Estimate{Value: (lo + hi) / 2, Lo: lo, Hi: hi, N: 10} }
	for _, tc := range []struct {
		name  string
		ours  Estimate
		paper float64
		want  string
	}{
		{"holds the paper's 5.5", est(3.9, 6.2), 5.5, "reaches the paper's size"},
		{"1.67 against 5.5", est(1.61, 1.72), 5.5, "same direction, smaller"},
		{"past the paper's", est(6, 8), 5.5, "beyond the paper's size"},
		{"the paper's ratio at the interval's end", est(2, 5.5), 5.5, "reaches the paper's size"},
		{"reversed", est(0.48, 0.94), 5.5, "reversed"},
		{"holds 1", est(0.9, 1.3), 5.5, "inconclusive (interval holds 1)"},
		{"holds 1 and the paper's", est(0.9, 6), 5.5, "inconclusive (interval holds 1 and the paper's)"},
		{"Lo exactly 1", est(1, 1.5), 1.2, "inconclusive (interval holds 1 and the paper's)"},
		{"below 1, reaching", est(0.2, 0.4), 0.3, "reaches the paper's size"},
		{"below 1, smaller", est(0.5, 0.7), 0.3, "same direction, smaller"},
		{"below 1, past", est(0.1, 0.2), 0.3, "beyond the paper's size"},
		{"below 1, reversed", est(1.1, 1.4), 0.3, "reversed"},
		{"paper says 1, agrees", est(0.9, 1.1), 1, "reaches the paper's size (interval holds 1)"},
		{"paper says 1, differs", est(1.2, 1.4), 1, "differs from the paper's 1"},
		{"no paper, above", est(1.2, 1.4), 0, "above 1 (no paper figure)"},
		{"no paper, below", est(0.2, 0.4), 0, "below 1 (no paper figure)"},
		{"no paper, holds 1", est(0.8, 1.4), 0, "inconclusive (interval holds 1; no paper figure)"},
		{"no interval", Estimate{Value: 2, Lo: math.NaN(), Hi: math.NaN(), N: 3}, 5.5, "inconclusive (no interval)"},
		{"not measured", Estimate{}, 5.5, "not measured"},
	} {
		assert.Equal(t, tc.want, Headline{Ours: tc.ours, Paper: tc.paper}.Verdict(), tc.name)
	}
	// A paper's range: meeting it reaches the paper's size.
	for _, tc := range []struct {
		name string
		ours Estimate
		want string
	}{
		{"10× against 10–56×", est(8, 12), "reaches the paper's size"},
		{"within 0.57–0.90", est(0.75, 0.85), "reaches the paper's size"},
		{"short of 10–56×", est(3, 8), "same direction, smaller"},
		{"past 10–56×", est(60, 80), "beyond the paper's size"},
	} {
		h := Headline{Ours: tc.ours, Paper: 33}
		if tc.ours.Hi < 1 {
			h.Paper = 0.735
			h = h.WithRange(0.57, 0.90)
		} else {
			h = h.WithRange(10, 56)
		}
		assert.Equal(t, tc.want, h.Verdict(), tc.name)
	}
}
