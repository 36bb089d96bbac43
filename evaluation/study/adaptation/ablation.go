package adaptation

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/aware-autoscaler/aware/evaluation/plot"
	"github.com/aware-autoscaler/aware/evaluation/study"
)

// unitGroups are the draws each unit shares with others, for the crossed
// bootstrap: its application, its test's TL source policy and its test's
// meta-training run.
func unitGroups(tests []Test, units []Unit) [][]string {
	byIndex := map[int]Test{}
	for _, t := range tests {
		byIndex[t.Index] = t
	}
	groups := make([][]string, len(units))
	for i, u := range units {
		t := byIndex[u.Test]
		groups[i] = []string{u.App, "source " + t.Source, fmt.Sprintf("meta seed %d", t.MetaSeed)}
	}
	return groups
}

// explorationNote states the exploration every adapting arm started
// from, as the cells recorded it: the same ε, or which arms differ.
func explorationNote(c Config, plan study.Plan, runs []Run) string {
	seen := map[string][]float64{}
	var order []string
	for i, cell := range plan {
		if cell.Arm == Rule || cell.Arm == Identification || i >= len(runs) {
			continue
		}
		if _, ok := seen[cell.Arm]; !ok {
			order = append(order, cell.Arm)
		}
		seen[cell.Arm] = append(seen[cell.Arm], runs[i].Epsilon)
	}
	var differ []string
	for _, arm := range order {
		for _, e := range seen[arm] {
			if e != c.Epsilon {
				differ = append(differ, fmt.Sprintf("%s from %.3g", arm, e))
				break
			}
		}
	}
	s := fmt.Sprintf("Exploration: every adapting arm starts its first episode at ε = %g (the Gaussian noise's scale, σ the lab's), decaying by the agents' common schedule: the meta-trained agent's ε, which decayed over meta-training, and TL's, which decayed over its source's training, are reset, so that no arm adapts with less exploration noise than another.", c.Epsilon)
	if len(differ) > 0 {
		s += " Not so in these cells: " + strings.Join(differ, ", ") + "."
	}
	return s
}

// convergence is one way of counting the episodes an arm took to
// converge on a unit, censored at the budget.
type convergence struct {
	name string
	get  func(Figures) (episodes int, censored bool)
}

// convergences are the rules the report counts by: the comparison with
// the best method's final window (the headline's), each arm's own
// plateau, and reaching R, the converged reference policy's reward
// (with Config.Converged).
func convergences(c Config) []convergence {
	out := []convergence{
		{"within the best final window", func(a Figures) (int, bool) { return a.Episodes, a.Censored }},
		{"its own plateau", func(a Figures) (int, bool) { return a.Plateau, a.PlateauCensored }},
	}
	if c.Converged > 0 {
		out = append(out, convergence{fmt.Sprintf("reaching R (%d-episode policy)", c.Converged), func(a Figures) (int, bool) { return a.ToR, a.ToRCensored }})
	}
	return out
}

// survival is episodes to converge as censored data: per rule and
// adapting arm, the units that converged within the budget, the
// Kaplan–Meier median and the restricted mean to the budget, with the
// first rule's curves plotted to path.
func survival(c Config, units []Unit, path string) (study.Table, error) {
	t := study.Table{Title: "Episodes to converge as censored data (Kaplan–Meier)",
		Columns: []string{"converged on", "arm", "units", "converged within the budget", "median (Kaplan–Meier)", "restricted mean to the budget"}}
	curves := plot.Curves{Title: "Not yet converged (within the best final window), Kaplan–Meier", XLabel: "episode", YLabel: "share of units not yet converged"}
	for k, rule := range convergences(c) {
		if k == 1 && c.Episodes < 2*c.Plateau.Window {
			continue // no plateau within one window
		}
		for _, arm := range append(slices.Clone(methods), Ablations...) {
			var times []float64
			var observed []bool
			for _, u := range units {
				if a, ok := u.Arms[arm]; ok {
					n, censored := rule.get(a)
					times = append(times, float64(n))
					observed = append(observed, !censored)
				}
			}
			if len(times) == 0 {
				continue
			}
			steps, err := study.KaplanMeier(times, observed)
			if err != nil {
				return t, fmt.Errorf("adaptation: %s, %s: %w", rule.name, arm, err)
			}
			rmst, err := study.RestrictedMean(steps, float64(c.Episodes))
			if err != nil {
				return t, fmt.Errorf("adaptation: %s, %s: %w", rule.name, arm, err)
			}
			n := 0
			for _, o := range observed {
				if o {
					n++
				}
			}
			median := "not reached"
			if m := study.MedianTime(steps); !math.IsNaN(m) {
				median = fmt.Sprint(m)
			}
			t.Rows = append(t.Rows, []string{rule.name, arm, fmt.Sprint(len(times)), fmt.Sprintf("%d (%.0f %%)", n, 100*float64(n)/float64(len(times))), median, fmt.Sprintf("%.3g", rmst)})
			if k == 0 {
				curves.Series = append(curves.Series, plot.Series{Name: arm, Y: survivalCurve(steps, c.Episodes)})
			}
		}
	}
	t.Notes = []string{fmt.Sprintf("Within the best final window: the per-arm table's rule (the trailing %d episodes' mean within %.0f %% of the best method's final window), which mixes speed with the final level. Its own plateau: the trailing %d episodes' mean within %.0f %% of the %d before it and staying there, whatever the level (the dissertation's rule). Reaching R: the trailing mean within the first rule's tolerance of a policy trained from scratch on the application (with --full's converged references). A unit that never converged is censored at the budget of %d episodes; every censoring is at the budget, so the restricted mean is the mean with censored units counted at the budget, a lower bound of what an unbounded budget would give: read the share converged and the median beside it.",
		c.Rule.Window, 100*c.Rule.Tolerance, c.Plateau.Window, 100*c.Plateau.Tolerance, c.Plateau.Window, c.Episodes)}
	return t, plot.Save(path, curves)
}

// survivalCurve is the Kaplan–Meier curve after each episode 1…n.
func survivalCurve(steps []study.KMStep, n int) []float64 {
	out := make([]float64, n)
	s, k := 1.0, 0
	for e := 1; e <= n; e++ {
		for ; k < len(steps) && steps[k].Time <= float64(e); k++ {
			s = steps[k].Survival
		}
		out[e-1] = s
	}
	return out
}

// ablationTable is, over the units that ran the ablations, each
// ablation's figures beside AWARE's and TL's, its difference from TL
// (episodes saved, reward gained) and the share of AWARE's lead over TL
// it keeps: (TL − arm) / (TL − AWARE) in episodes to converge, (arm − TL)
// / (AWARE − TL) in mean reward, ratios of means over paired units with
// the crossed bootstrap's intervals. A share is given only where AWARE's
// lead is established (its interval lies above 0): over a lead that may
// be nothing, a ratio is noise. false when no unit ran the ablations.
func ablationTable(c Config, tests []Test, units []Unit, bs study.Bootstrap) (study.Table, bool, error) {
	var ablated []Unit
	for _, u := range units {
		if _, ok := u.Arms[ZeroEmbedding]; ok {
			ablated = append(ablated, u)
		}
	}
	if len(ablated) == 0 {
		return study.Table{}, false, nil
	}
	which := "test 1"
	if c.Ablations > 1 {
		which = fmt.Sprintf("tests 1–%d", c.Ablations)
	}
	t := study.Table{Title: fmt.Sprintf("Ablations: what of AWARE's lead over TL is left (the %d units of %s), mean [95 %% CI]", len(ablated), which),
		Columns: []string{"arm", "episodes to converge", "mean reward", "SLO violations / episode", "never converged",
			"episodes saved vs TL", "reward gained vs TL", "lead kept: episodes", "lead kept: reward"}}
	groups := unitGroups(tests, ablated)
	type figure struct {
		get  func(Figures) float64
		sign float64 // +1: less is better (TL − arm), −1: more is better (arm − TL)
	}
	episodes := figure{func(a Figures) float64 { return float64(a.Episodes) }, 1}
	reward := figure{func(a Figures) float64 { return a.Reward }, -1}
	// gain is sign·(TL − arm) per unit: what arm does better than TL.
	gain := func(arm string, f figure) []float64 {
		out := make([]float64, len(ablated))
		for i, u := range ablated {
			out[i] = f.sign * (f.get(u.Arms[TL]) - f.get(u.Arms[arm]))
		}
		return out
	}
	crossedMean := func(xs []float64) (study.Estimate, error) {
		us := make([]study.Unit, len(xs))
		for i, x := range xs {
			us[i] = study.Unit{Value: x, Groups: groups[i]}
		}
		return bs.Crossed(us, study.WeightedMean)
	}
	lead := map[string]study.Estimate{} // AWARE's gain over TL, per figure
	for name, f := range map[string]figure{"episodes": episodes, "reward": reward} {
		e, err := crossedMean(gain(AWARE, f))
		if err != nil {
			return t, false, fmt.Errorf("adaptation: AWARE's lead over TL: %w", err)
		}
		lead[name] = e
	}
	share := func(arm, name string, f figure) (string, error) {
		if l := lead[name]; !(l.Lo > 0) {
			return "– (AWARE's lead not established)", nil
		}
		e, err := bs.PairedRatio(gain(arm, f), gain(AWARE, f), groups)
		if err != nil {
			return "", fmt.Errorf("adaptation: %s's share of AWARE's lead: %w", arm, err)
		}
		return e.String(), nil
	}
	for _, arm := range append([]string{AWARE}, append(slices.Clone(Ablations), TL)...) {
		if _, ok := ablated[0].Arms[arm]; !ok {
			continue // multi-task DDPG with a meta-training run from elsewhere
		}
		row := []string{arm}
		for _, get := range []func(Figures) float64{episodes.get, reward.get, func(a Figures) float64 { return a.SLO }} {
			e, err := bs.Mean(values(ablated, arm, get))
			if err != nil {
				return t, false, err
			}
			row = append(row, e.String())
		}
		n := 0
		for _, u := range ablated {
			if u.Arms[arm].Censored {
				n++
			}
		}
		row = append(row, fmt.Sprintf("%d of %d", n, len(ablated)))
		if arm == TL {
			t.Rows = append(t.Rows, append(row, "–", "–", "0 (by definition)", "0 (by definition)"))
			continue
		}
		for _, f := range []figure{episodes, reward} {
			e, err := crossedMean(gain(arm, f))
			if err != nil {
				return t, false, err
			}
			row = append(row, e.String())
		}
		if arm == AWARE {
			t.Rows = append(t.Rows, append(row, "1 (by definition)", "1 (by definition)"))
			continue
		}
		for _, k := range []struct {
			name string
			f    figure
		}{{"episodes", episodes}, {"reward", reward}} {
			v, err := share(arm, k.name, k.f)
			if err != nil {
				return t, false, err
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = []string{
		"AWARE-zero-embedding: the meta-trained agent adapting with a zero embedding throughout; AWARE-untrained-embedding: with the embedding of its own episodes by a frozen embedder of untrained weights; AWARE-shuffled-embedding: with the frozen meta learner's embedding of another application's bundle (a meta-training application drawn per unit), fixed; multitask-DDPG: the same agent trained over the same applications, rounds and episodes with a zero embedding and the meta learner off, then fine-tuned as TL is. All start from the same ε (the exploration paragraph).",
		"Saved and gained vs TL: TL − arm in episodes to converge, arm − TL in mean reward, over paired units (intervals redraw applications, source policies and meta-training runs). Lead kept: the arm's gain over AWARE's, 1 as good as AWARE, 0 no better than TL, below 0 worse than TL; given only where AWARE's own gain lies above 0. An ablation that keeps most of the lead says the embedding is not what helps.",
	}
	return t, true, nil
}
