package bootstrapping

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aware-autoscaler/aware/evaluation/plot"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
)

// Outcome is one application: every arm's means over all its episodes
// and over those after the recorded ones (when the bootstrapped agent
// acts).
type Outcome struct {
	App    string               `json:"app"`
	All    map[string]lab.Means `json:"all"`
	Acting map[string]lab.Means `json:"afterRecords"`
}

// Outcomes computes every application's outcome from the cells' results
// (in plan order).
func Outcomes(c Config, plan study.Plan, runs []Run) ([]Outcome, error) {
	if len(plan) != len(runs) {
		return nil, fmt.Errorf("bootstrapping: %d results for %d cells", len(runs), len(plan))
	}
	idx := map[string]int{}
	var out []Outcome
	for i, cell := range plan {
		j, ok := idx[cell.App]
		if !ok {
			j = len(out)
			idx[cell.App] = j
			out = append(out, Outcome{App: cell.App, All: map[string]lab.Means{}, Acting: map[string]lab.Means{}})
		}
		all, err := runs[i].Means(0, c.Episodes)
		if err != nil {
			return nil, fmt.Errorf("bootstrapping: cell %s: %w", cell.Key(), err)
		}
		acting, err := runs[i].Means(c.Records, c.Episodes)
		if err != nil {
			return nil, fmt.Errorf("bootstrapping: cell %s: %w", cell.Key(), err)
		}
		out[j].All[cell.Arm], out[j].Acting[cell.Arm] = all, acting
	}
	for _, o := range out {
		for _, arm := range c.AllArms() {
			if _, ok := o.All[arm]; !ok {
				return nil, fmt.Errorf("bootstrapping: %s: no %s cell", o.App, arm)
			}
		}
	}
	return out, nil
}

func valuesOf(outs []Outcome, acting bool) lab.Values {
	return lab.ValuesOf(outs, func(o Outcome) map[string]lab.Means {
		if acting {
			return o.Acting
		}
		return o.All
	})
}

// Render is the study's report, with its plots written into dir.
func Render(c Config, plan study.Plan, runs []Run, traces []string, bs study.Bootstrap, dir string) (study.Report, error) {
	outs, err := Outcomes(c, plan, runs)
	if err != nil {
		return study.Report{}, err
	}
	rep := study.Report{Title: "Bootstrapping a new application (paper §5.4)"}
	rep.Paragraphs = []string{
		fmt.Sprintf("The first %d episodes of %d test-split applications (seed %d), every arm reset with the same seeds. AWARE-bootstrapped: the tuned rule-based autoscaler acts for the first %d episodes (OFFLINE) and every step is recorded; a BCQ agent (Φ = %g) trains %d updates on the records alone and then acts and trains online. no-bootstrapping: a fresh DDPG agent acts and trains from the first step. rule-based: the tuned HPA+VPA (highest CPU target meeting the SLO, VPA auto) throughout. converged: a DDPG policy trained from scratch for %d episodes, greedy.",
			c.Episodes, len(outs), c.Seed, c.Records, c.Phi, c.Updates, c.Converged),
		fmt.Sprintf("Means over applications with %.0f %% percentile-bootstrap intervals (%d resamples); ratios are ratios of means, applications resampled in pairs. Load: %s.", 100*bs.Level, bs.Resamples, strings.Join(traces, "; ")),
	}
	if n := lab.ConvergedNote(c.Converged); n != "" {
		rep.Paragraphs = append(rep.Paragraphs, n)
	}
	if len(c.Extra) > 0 {
		rep.Paragraphs = append(rep.Paragraphs, extraParagraph(c))
	}
	for _, part := range []struct {
		title  string
		acting bool
	}{
		{fmt.Sprintf("All %d episodes, per arm: mean [95 %% CI] over applications", c.Episodes), false},
		{fmt.Sprintf("Episodes %d–%d (after the records: the bootstrapped agent acts)", c.Records+1, c.Episodes), true},
	} {
		t, err := lab.ArmTable(part.title, c.AllArms(), lab.Figures, bs, valuesOf(outs, part.acting))
		if err != nil {
			return study.Report{}, err
		}
		rep.Tables = append(rep.Tables, t)
	}
	if len(c.Extra) > 0 {
		ts, err := ablationTables(c, plan, runs, bs)
		if err != nil {
			return study.Report{}, err
		}
		rep.Tables = append(rep.Tables, ts...)
	}
	rep.Headlines, err = lab.Headlines(Name, []lab.Ratio{
		{Figure: "CPU util, bootstrapped / not", Num: AWARE, Den: NoBoot, Of: lab.CPUUtil, Paper: 1.475},
		{Figure: "memory util, bootstrapped / not", Num: AWARE, Den: NoBoot, Of: lab.MemoryUtil, Paper: 1.392},
		{Figure: "SLO violations, not bootstrapped / bootstrapped", Num: NoBoot, Den: AWARE, Of: lab.SLOViolations, Paper: 16.9},
		{Figure: "reward, bootstrapped / not", Num: AWARE, Den: NoBoot, Of: lab.Reward, Paper: 1.473},
	}, bs, valuesOf(outs, false), appGroups(outs))
	if err != nil {
		return study.Report{}, err
	}
	if rep.Wins, err = lab.Wins(Name, fmt.Sprintf("the first %d", c.Episodes), []string{AWARE, NoBoot, Converged}, Rule, bs, valuesOf(outs, false), appGroups(outs)); err != nil {
		return study.Report{}, err
	}
	for _, f := range []struct {
		file, title, y string
		get            func(lab.Curve, int) float64
	}{
		{"reward.png", "Reward over the first episodes", "episode reward", func(c lab.Curve, e int) float64 { return c.Rewards[e] }},
		{"slo.png", "SLO violations over the first episodes", "SLO violations / episode", func(c lab.Curve, e int) float64 { return float64(c.SLOViolations[e]) }},
	} {
		curves := plot.Curves{Title: f.title + ", mean over applications", XLabel: "episode", YLabel: f.y, Smooth: 5}
		for _, arm := range c.AllArms() {
			sum, k := make([]float64, c.Episodes), 0
			for i, cell := range plan {
				if cell.Arm == arm {
					for e := range sum {
						sum[e] += f.get(runs[i].Curve, e)
					}
					k++
				}
			}
			for e := range sum {
				sum[e] /= float64(k)
			}
			curves.Series = append(curves.Series, plot.Series{Name: arm, Y: sum})
		}
		if err := plot.Save(filepath.Join(dir, f.file), curves); err != nil {
			return study.Report{}, err
		}
		rep.Figures = append(rep.Figures, study.Figure{File: f.file, Caption: f.title + ", mean over applications"})
	}
	return rep, nil
}

// extraParagraph says what the extra arms ran.
func extraParagraph(c Config) string {
	var parts []string
	for _, arm := range c.Extra {
		kind, phi, _ := parseExtra(arm)
		switch kind {
		case bcqPrefix:
			parts = append(parts, fmt.Sprintf("%s: as AWARE-bootstrapped with BCQ's Φ = %g", arm, phi))
		case OfflineDDPG:
			parts = append(parts, fmt.Sprintf("%s: as AWARE-bootstrapped with plain DDPG trained on the same records instead of BCQ", arm))
		case PPO:
			parts = append(parts, fmt.Sprintf("%s: a fresh PPO agent (Gaussian head) acts and trains from the first episode", arm))
		case PPOFitted:
			parts = append(parts, fmt.Sprintf("%s: OFFLINE as AWARE-bootstrapped; a simulator of the application is fitted from the recorded metrics (workloads/sim.Fit: CPU per request, working set, service-time quantiles; load replaying the recorded arrivals), a fresh PPO agent trains in it for %d episodes (random start points in the recorded load), then acts and keeps training", arm, c.SimEpisodes))
		}
	}
	return "Extra arms, on the same episodes: " + strings.Join(parts, "; ") + "."
}

// appGroups are the units' draws: one application each.
func appGroups(outs []Outcome) [][]string {
	out := make([][]string, len(outs))
	for i, o := range outs {
		out[i] = []string{o.App}
	}
	return out
}
