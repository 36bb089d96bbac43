package characterisation

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aware-autoscaler/aware/evaluation/plot"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
)

// Change is the outcome of one change (a move or a scenario).
type Change struct {
	Cell study.Cell `json:"cell"`
	// Reference is the reward it should get back to: the converged reward
	// on the new application (a move), or the run's own final window (a
	// scenario: its new steady state).
	Reference float64 `json:"reference"`
	// Drop is the first window's reward loss relative to the reward before
	// (a scenario) or the new application's converged reward (a move).
	Drop float64 `json:"drop"`
	// Episodes to re-converge (the budget when censored).
	Episodes int  `json:"episodesToReconverge"`
	Censored bool `json:"censored,omitempty"`
	// First is the first window's mean reward; Base the reward the drop
	// is relative to.
	First float64 `json:"firstWindowReward"`
	Base  float64 `json:"baseReward"`
}

// Changes computes the moves' and the scenarios' outcomes.
func Changes(c Config, plan study.Plan, runs []Run) ([]Change, error) {
	if len(plan) != len(runs) {
		return nil, fmt.Errorf("characterisation: %d results for %d cells", len(runs), len(plan))
	}
	var out []Change
	for i, cell := range plan {
		if cell.Arm != NewApp && cell.Arm != Scenario {
			continue
		}
		r := runs[i]
		if r.Len() < c.Rule.Window {
			return nil, fmt.Errorf("characterisation: cell %s holds %d episodes, fewer than the window %d", cell.Key(), r.Len(), c.Rule.Window)
		}
		first, err := r.Means(0, c.Rule.Window)
		if err != nil {
			return nil, err
		}
		ch := Change{Cell: cell, First: first.Reward}
		base := r.Before
		if cell.Arm == NewApp {
			ch.Reference, base = r.Target, r.Target
		} else if ch.Reference, err = c.Rule.Final(r.Rewards); err != nil {
			return nil, err
		}
		ch.Base = base
		if base != 0 {
			ch.Drop = (base - first.Reward) / abs(base)
		}
		n, ok, err := c.Rule.Episodes(r.Rewards, ch.Reference)
		if err != nil {
			return nil, err
		}
		ch.Episodes, ch.Censored = n, !ok
		out = append(out, ch)
	}
	return out, nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// early is the early-training cells' means per application: the agent's
// and the rule-based autoscaler's.
func early(c Config, plan study.Plan, runs []Run) (agent, rule []lab.Means, err error) {
	for i, cell := range plan {
		if cell.Arm != EarlyAgent && cell.Arm != EarlyRule {
			continue
		}
		m, err := runs[i].Means(0, c.Early)
		if err != nil {
			return nil, nil, fmt.Errorf("characterisation: cell %s: %w", cell.Key(), err)
		}
		if cell.Arm == EarlyAgent {
			agent = append(agent, m)
		} else {
			rule = append(rule, m)
		}
	}
	if len(agent) != len(rule) {
		return nil, nil, fmt.Errorf("characterisation: %d early-training agents but %d rule-based runs", len(agent), len(rule))
	}
	return agent, rule, nil
}

// Render is the study's report, with its plots written into dir.
func Render(c Config, plan study.Plan, runs []Run, traces []string, bs study.Bootstrap, dir string) (study.Report, error) {
	changes, err := Changes(c, plan, runs)
	if err != nil {
		return study.Report{}, err
	}
	agent, rule, err := early(c, plan, runs)
	if err != nil {
		return study.Report{}, err
	}
	rep := study.Report{Title: "Characterisation: what a converged policy loses when its application changes (paper §2.3)"}
	rep.Paragraphs = []string{
		fmt.Sprintf("Every policy is DDPG trained from scratch for %d episodes on a test-split application (seed %d); after a change it keeps training (exploring) for %d episodes. (a) New application: %d policies each moved to the next application of the draw (transfer learning). (b) Scenarios: for each of %d scenarios (%s), up to %d applications it affects. (c) Early training: the first %d episodes of those policies' training against the tuned rule-based autoscaler (highest CPU target meeting the SLO, VPA auto) on the same episodes.",
			c.Converged, c.Seed, c.Episodes, len(agent), len(c.scenarios()), strings.Join(c.scenarios(), ", "), c.Apps, c.Early),
		fmt.Sprintf("Reward drop: the first %d episodes' mean reward below the reward before the change (a scenario) or below the new application's own converged policy (a move), relative to it. Re-converged: from the first episode on which the trailing %d episodes' mean stays within %.0f %% of the new application's converged reward (a move) or of the run's final %d episodes (a scenario: its new steady state); censored at the budget.",
			c.Rule.Window, c.Rule.Window, 100*c.Rule.Tolerance, c.Rule.Window),
		fmt.Sprintf("Means with %.0f %% percentile-bootstrap intervals (%d resamples). Load: %s.", 100*bs.Level, bs.Resamples, strings.Join(traces, "; ")),
	}
	if n := lab.ConvergedNote(c.Converged); n != "" {
		rep.Paragraphs = append(rep.Paragraphs, n)
	}
	pick := func(kind, scenario string) []Change {
		var out []Change
		for _, ch := range changes {
			if ch.Cell.Arm == kind && (scenario == "" || ch.Cell.Scenario == scenario) {
				out = append(out, ch)
			}
		}
		return out
	}
	t := study.Table{Title: "Reward drop and episodes to re-converge, mean [95 % CI]", Columns: []string{"change", "units", "reward drop (%)", "episodes to re-converge", "never re-converged", "paper"}}
	row := func(name string, chs []Change, paper string) error {
		if len(chs) == 0 {
			t.Rows = append(t.Rows, []string{name, "0", "no application drawn is affected", "", "", paper})
			return nil
		}
		var drop, eps []float64
		censored := 0
		for _, ch := range chs {
			drop, eps = append(drop, 100*ch.Drop), append(eps, float64(ch.Episodes))
			if ch.Censored {
				censored++
			}
		}
		d, err := bs.Mean(drop)
		if err != nil {
			return err
		}
		e, err := bs.Mean(eps)
		if err != nil {
			return err
		}
		t.Rows = append(t.Rows, []string{name, fmt.Sprint(len(chs)), d.String(), e.String(), fmt.Sprintf("%d of %d", censored, len(chs)), paper})
		return nil
	}
	if err := row("new application (TL)", pick(NewApp, ""), "45.6 % lost, ~230 episodes"); err != nil {
		return study.Report{}, err
	}
	if err := row("any scenario", pick(Scenario, ""), "12.8–21.8 % lost, 70–107 episodes"); err != nil {
		return study.Report{}, err
	}
	for _, s := range c.scenarios() {
		if err := row("scenario "+s, pick(Scenario, s), ""); err != nil {
			return study.Report{}, err
		}
	}
	rep.Tables = append(rep.Tables, t)

	et := study.Table{Title: fmt.Sprintf("Early training (first %d episodes): DDPG from scratch against the rule-based autoscaler, mean [95 %% CI] over applications", c.Early),
		Columns: []string{"", "CPU util", "memory util", "SLO violations / episode", "reward"}}
	get := []func(lab.Means) float64{
		func(m lab.Means) float64 { return m.CPUUtil }, func(m lab.Means) float64 { return m.MemoryUtil },
		func(m lab.Means) float64 { return m.SLOViolations }, func(m lab.Means) float64 { return m.Reward },
	}
	col := func(ms []lab.Means, g func(lab.Means) float64) []float64 {
		out := make([]float64, len(ms))
		for i, m := range ms {
			out[i] = g(m)
		}
		return out
	}
	for _, arm := range []struct {
		name string
		ms   []lab.Means
	}{{"DDPG, training from scratch", agent}, {"rule-based", rule}} {
		r := []string{arm.name}
		for _, g := range get {
			e, err := bs.Mean(col(arm.ms, g))
			if err != nil {
				return study.Report{}, err
			}
			r = append(r, e.String())
		}
		et.Rows = append(et.Rows, r)
	}
	rep.Tables = append(rep.Tables, et)

	// groups: the applications the units were drawn on (a scenario's
	// units share applications with the others'); nil: one unit each.
	var herr error
	ratio := func(figure string, num, den []float64, groups [][]string, paper, lo, hi float64) {
		h, err := bs.PairedHeadline(Name, figure, num, den, groups, paper)
		herr = errors.Join(herr, err)
		rep.Headlines = append(rep.Headlines, h.WithRange(lo, hi))
	}
	firstAndBase := func(chs []Change) (first, base []float64, groups [][]string) {
		for _, ch := range chs {
			first = append(first, ch.First)
			base = append(base, ch.Base)
			groups = append(groups, []string{ch.Cell.App})
		}
		return first, base, groups
	}
	if f, b, g := firstAndBase(pick(NewApp, "")); len(f) > 0 {
		ratio("reward after a move / converged reward there (paper: 45.6 % lost)", f, b, g, 1-0.456, 0, 0)
	}
	if f, b, g := firstAndBase(pick(Scenario, "")); len(f) > 0 {
		ratio("reward after a scenario / before (paper: 12.8–21.8 % lost)", f, b, g, 1-0.173, 1-0.218, 1-0.128)
	}
	// Early training: one policy per application.
	ratio("CPU util, early DDPG / rule-based (paper: −10 to −43 %)", col(agent, get[0]), col(rule, get[0]), nil, 1-0.265, 1-0.43, 1-0.10)
	ratio("memory util, early DDPG / rule-based (paper: −8 to −31 %)", col(agent, get[1]), col(rule, get[1]), nil, 1-0.195, 1-0.31, 1-0.08)
	ratio("SLO violations, early DDPG / rule-based (paper: 10–56×)", col(agent, get[2]), col(rule, get[2]), nil, 33, 10, 56)
	if herr != nil {
		return study.Report{}, herr
	}
	var earlyApps [][]string // the early agents' applications, in early's order
	for _, cell := range plan {
		if cell.Arm == EarlyAgent {
			earlyApps = append(earlyApps, []string{cell.App})
		}
	}
	w, err := bs.WinRule(Name, "DDPG, training from scratch", fmt.Sprintf("the first %d", c.Early), col(agent, get[3]), col(rule, get[3]), col(agent, get[2]), col(rule, get[2]), earlyApps)
	if err != nil {
		return study.Report{}, err
	}
	rep.Wins = append(rep.Wins, w)

	// Reward after the change relative to the reward before, mean per kind.
	curves := plot.Curves{Title: "Reward after the change, relative to before", XLabel: "episode after the change", YLabel: "reward / reward before", Smooth: 5,
		References: []plot.Reference{{Name: "before", Y: 1}}}
	for _, kind := range []string{NewApp, Scenario} {
		sum, k := make([]float64, c.Episodes), 0
		for i, cell := range plan {
			base := runs[i].Before
			if cell.Arm == NewApp {
				base = runs[i].Target
			}
			if cell.Arm != kind || base == 0 {
				continue
			}
			for e := range sum {
				sum[e] += runs[i].Rewards[e] / abs(base)
			}
			k++
		}
		if k == 0 {
			continue
		}
		for e := range sum {
			sum[e] /= float64(k)
		}
		curves.Series = append(curves.Series, plot.Series{Name: kind, Y: sum})
	}
	if len(curves.Series) > 0 {
		if err := plot.Save(filepath.Join(dir, "reward-after-change.png"), curves); err != nil {
			return study.Report{}, err
		}
		rep.Figures = append(rep.Figures, study.Figure{File: "reward-after-change.png", Caption: "Reward after a move and after a scenario, relative to the reward before, mean over units"})
	}
	var drops []plot.Sample
	for _, kind := range []string{NewApp, Scenario} {
		var v []float64
		for _, ch := range pick(kind, "") {
			v = append(v, 100*ch.Drop)
		}
		if len(v) > 0 {
			drops = append(drops, plot.Sample{Name: kind, Values: v})
		}
	}
	if err := plot.SaveCDF(filepath.Join(dir, "drop-cdf.png"), plot.CDF{Title: "Reward drop after a change", XLabel: "reward drop (%)", Samples: drops}); err != nil {
		return study.Report{}, err
	}
	rep.Figures = append(rep.Figures, study.Figure{File: "drop-cdf.png", Caption: "Reward drop after a change, CDF over units"})
	return rep, nil
}
