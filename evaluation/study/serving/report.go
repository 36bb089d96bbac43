package serving

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aware-autoscaler/aware/evaluation/plot"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
)

// Outcome is one application under one scenario: every arm's means
// after the switch.
type Outcome struct {
	App        string               `json:"app"`
	Scenario   string               `json:"scenario"`
	After      map[string]lab.Means `json:"after"`
	Retraining int                  `json:"awareRetrainingEpisodes"`
}

// Outcomes computes every unit's outcome from the cells' results (in plan order).
func Outcomes(c Config, plan study.Plan, runs []Run) ([]Outcome, error) {
	if len(plan) != len(runs) {
		return nil, fmt.Errorf("serving: %d results for %d cells", len(runs), len(plan))
	}
	idx := map[[2]string]int{}
	var out []Outcome
	for i, cell := range plan {
		k := [2]string{cell.App, cell.Scenario}
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, Outcome{App: cell.App, Scenario: cell.Scenario, After: map[string]lab.Means{}})
		}
		m, err := runs[i].Means(c.Before, c.Before+c.After)
		if err != nil {
			return nil, fmt.Errorf("serving: cell %s: %w", cell.Key(), err)
		}
		out[j].After[cell.Arm] = m
		if cell.Arm == AWARE {
			out[j].Retraining = runs[i].Retraining()
		}
	}
	for _, u := range out {
		for _, arm := range Arms {
			if _, ok := u.After[arm]; !ok {
				return nil, fmt.Errorf("serving: %s under %s: no %s cell", u.App, u.Scenario, arm)
			}
		}
	}
	return out, nil
}

func valuesOf(units []Outcome) lab.Values {
	return lab.ValuesOf(units, func(u Outcome) map[string]lab.Means { return u.After })
}

// Render is the study's report, with its plots written into dir.
func Render(c Config, plan study.Plan, runs []Run, traces []string, bs study.Bootstrap, dir string) (study.Report, error) {
	units, err := Outcomes(c, plan, runs)
	if err != nil {
		return study.Report{}, err
	}
	apps := map[string]bool{}
	for _, u := range units {
		apps[u.App] = true
	}
	rep := study.Report{Title: "Serving under instability scenarios, with and without retraining (paper §5.3)"}
	rep.Paragraphs = []string{
		fmt.Sprintf("%d test-split applications (seed %d): for each of the %d scenarios (%s), up to %d of those it affects (a payload scenario only applications with a segment it resizes): %d units. On each, a DDPG policy trained from scratch for %d episodes serves, frozen, for %d episodes; then the scenario hits and it serves %d more. Figures are over the %d episodes after the switch.",
			len(apps), c.Seed, len(c.scenarios()), strings.Join(c.scenarios(), ", "), c.Apps, len(units), c.Converged, c.Before, c.After, c.After),
		fmt.Sprintf("AWARE: the retraining detector (Algorithm 1, controller/autoscaler.NextStage) watches the trailing %d episodes' rewards; below %.0f %% of the policy's converged (greedy) reward on the unchanged application, or with a standard deviation above %.0f %% of it, the agent goes ONLINE and trains (exploring) until it is back above that threshold and steady, then serves frozen again. no-retraining: the same policy frozen throughout. rule-based: the tuned HPA+VPA (highest CPU target meeting the SLO, VPA auto) throughout, its history kept across the switch. converged: from the switch on, a policy trained from scratch for %d episodes on the changed application (an upper reference).",
			c.Window, 100*(1-c.ServingTolerance), 100*c.VarianceTolerance, c.Converged),
		fmt.Sprintf("Means over units with %.0f %% percentile-bootstrap intervals (%d resamples); ratios are ratios of means over paired units, their applications resampled rather than the units (a unit is an application under a scenario). Load: %s.", 100*bs.Level, bs.Resamples, strings.Join(traces, "; ")),
	}
	if n := lab.ConvergedNote(c.Converged); n != "" {
		rep.Paragraphs = append(rep.Paragraphs, n)
	}
	values := valuesOf(units)
	t, err := lab.ArmTable("After the switch, per arm: mean [95 % CI] over units", Arms, lab.Figures, bs, values)
	if err != nil {
		return study.Report{}, err
	}
	var retrain []float64
	for _, u := range units {
		retrain = append(retrain, float64(u.Retraining))
	}
	e, err := bs.Mean(retrain)
	if err != nil {
		return study.Report{}, err
	}
	t.Columns = append(t.Columns, "episodes retraining")
	for i := range t.Rows {
		cell := "–"
		if Arms[i] == AWARE {
			cell = e.String()
		}
		t.Rows[i] = append(t.Rows[i], cell)
	}
	rep.Tables = append(rep.Tables, t)

	st := study.Table{Title: "Per scenario: reward after the switch, mean over its applications", Columns: append([]string{"scenario"}, Arms...)}
	st.Columns = append(st.Columns, "AWARE episodes retraining")
	for _, s := range c.scenarios() {
		row := []string{s}
		sums, n, retrain := map[string]float64{}, 0, 0
		for _, u := range units {
			if u.Scenario != s {
				continue
			}
			n++
			retrain += u.Retraining
			for _, arm := range Arms {
				sums[arm] += u.After[arm].Reward
			}
		}
		if n == 0 {
			st.Rows = append(st.Rows, append(row, "no test-split application drawn is affected"))
			continue
		}
		for _, arm := range Arms {
			row = append(row, fmt.Sprintf("%.1f", sums[arm]/float64(n)))
		}
		st.Rows = append(st.Rows, append(row, fmt.Sprintf("%.1f", float64(retrain)/float64(n))))
	}
	rep.Tables = append(rep.Tables, st)

	rep.Headlines, err = lab.Headlines(Name, []lab.Ratio{
		{Figure: "CPU util, AWARE / no retraining", Num: AWARE, Den: NoRetrain, Of: lab.CPUUtil, Paper: 1.096},
		{Figure: "memory util, AWARE / no retraining", Num: AWARE, Den: NoRetrain, Of: lab.MemoryUtil, Paper: 1.148},
		{Figure: "SLO violations, no retraining / AWARE", Num: NoRetrain, Den: AWARE, Of: lab.SLOViolations, Paper: 3.1},
		{Figure: "reward, AWARE / no retraining", Num: AWARE, Den: NoRetrain, Of: lab.Reward, Paper: 1.086},
		{Figure: "reward, AWARE / converged", Num: AWARE, Den: Converged, Of: lab.Reward, Paper: 0.964},
	}, bs, values, appGroups(units))
	if err != nil {
		return study.Report{}, err
	}

	if rep.Wins, err = lab.Wins(Name, fmt.Sprintf("%d after the switch", c.After), []string{AWARE, NoRetrain, Converged}, Rule, bs, values, appGroups(units)); err != nil {
		return study.Report{}, err
	}

	// Reward around the switch, mean over units.
	n := c.Before + c.After
	curves := plot.Curves{Title: fmt.Sprintf("Reward around the switch (scenario hits at episode %d)", c.Before+1), XLabel: "episode", YLabel: "episode reward"}
	for _, arm := range Arms {
		sum, k := make([]float64, n), 0
		for i, cell := range plan {
			if cell.Arm == arm {
				for e := range sum {
					sum[e] += runs[i].Rewards[e]
				}
				k++
			}
		}
		for e := range sum {
			sum[e] /= float64(k)
		}
		curves.Series = append(curves.Series, plot.Series{Name: arm, Y: sum})
	}
	if err := plot.Save(filepath.Join(dir, "reward-around-switch.png"), curves); err != nil {
		return study.Report{}, err
	}
	rep.Figures = append(rep.Figures, study.Figure{File: "reward-around-switch.png", Caption: "Episode reward around the scenario switch, mean over units"})
	for _, f := range []struct {
		file, title, x string
		fig            lab.Figure
	}{
		{"slo-cdf.png", "SLO violations per episode after the switch", "SLO violations / episode", lab.SLOViolations},
		{"cpu-util-cdf.png", "CPU utilisation after the switch", "CPU utilisation", lab.CPUUtil},
	} {
		var samples []plot.Sample
		for _, arm := range Arms {
			samples = append(samples, plot.Sample{Name: arm, Values: values(arm, f.fig)})
		}
		if err := plot.SaveCDF(filepath.Join(dir, f.file), plot.CDF{Title: f.title, XLabel: f.x, Samples: samples}); err != nil {
			return study.Report{}, err
		}
		rep.Figures = append(rep.Figures, study.Figure{File: f.file, Caption: f.title + ", CDF over units"})
	}
	return rep, nil
}

// appGroups are the units' draws: a unit is an application under a
// scenario, and the scenarios share the applications.
func appGroups(units []Outcome) [][]string {
	out := make([][]string, len(units))
	for i, u := range units {
		out[i] = []string{u.App}
	}
	return out
}
