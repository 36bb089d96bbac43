package lab

import (
	"fmt"

	"github.com/aware-autoscaler/aware/evaluation/study"
)

// Values gives the units' figure f for arm, in unit order.
type Values func(arm string, f Figure) []float64

// ValuesOf is the Values of units whose per-arm means arms gives.
func ValuesOf[U any](units []U, arms func(U) map[string]Means) Values {
	return func(arm string, f Figure) []float64 {
		out := make([]float64, len(units))
		for i, u := range units {
			out[i] = f.Of(arms(u)[arm])
		}
		return out
	}
}

// AppArmPlan is a cell per application and arm, the arms of each
// application together.
func AppArmPlan(apps, arms []string, seed uint64) study.Plan {
	var p study.Plan
	for _, a := range apps {
		for _, arm := range arms {
			p = append(p, study.Cell{Arm: arm, App: a, Seed: seed})
		}
	}
	return p
}

// ArmTable is a table with a row per arm and a column per figure, each
// the mean over units with its bootstrap interval.
func ArmTable(title string, arms []string, figs []Figure, bs study.Bootstrap, values Values) (study.Table, error) {
	t := study.Table{Title: title, Columns: []string{"arm"}}
	for _, f := range figs {
		t.Columns = append(t.Columns, f.Name)
	}
	for _, arm := range arms {
		row := []string{arm}
		for _, f := range figs {
			e, err := bs.Mean(values(arm, f))
			if err != nil {
				return study.Table{}, err
			}
			row = append(row, e.String())
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// Ratio is one of a study's ratios beside the paper's: figure Of of arm
// Num over arm Den, units paired.
type Ratio struct {
	Figure   string
	Num, Den string
	Of       Figure
	Paper    float64
}

// Headlines computes the ratios over the units, whose draws groups gives
// (study.PairedHeadline; a ratio over a zero mean is reported as not
// measured).
func Headlines(name string, rs []Ratio, bs study.Bootstrap, values Values, groups [][]string) ([]study.Headline, error) {
	var out []study.Headline
	for _, r := range rs {
		h, err := bs.PairedHeadline(name, r.Figure, values(r.Num, r.Of), values(r.Den, r.Of), groups, r.Paper)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// Wins holds each agent arm against the rule-based arm rule on the same
// units (study.WinRule: reward and SLO violations, groups as in
// Headlines), over the episodes window names.
func Wins(name, window string, agents []string, rule string, bs study.Bootstrap, values Values, groups [][]string) ([]study.Win, error) {
	var out []study.Win
	for _, arm := range agents {
		w, err := bs.WinRule(name, arm, window, values(arm, Reward), values(rule, Reward), values(arm, SLOViolations), values(rule, SLOViolations), groups)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// Comparison is the testbed against the simulator, cell by cell: a row
// per arm and figure with the testbed's mean over units and the
// simulator's for the same cells, each with its bootstrap interval, their
// paired difference (testbed − simulator, units resampled in pairs) and
// whether the testbed's mean lies within the simulator's interval.
// testbed and simulator must give the same units in the same order.
func Comparison(title string, arms []string, figs []Figure, bs study.Bootstrap, testbed, simulator Values) (study.Table, int, error) {
	t := study.Table{Title: title, Columns: []string{"arm", "figure", "testbed", "simulator", "difference", "testbed within the simulator's interval"},
		Notes: []string{"Means over applications with percentile-bootstrap intervals; the difference is testbed − simulator per application, resampled in pairs. Every \"no\" is explained in docs/studies.md (Studies on the testbed) or is a defect."}}
	outside := 0
	for _, arm := range arms {
		for _, f := range figs {
			tb, sm := testbed(arm, f), simulator(arm, f)
			if len(tb) != len(sm) {
				return study.Table{}, 0, fmt.Errorf("lab: %s %s: %d units on the testbed, %d on the simulator", arm, f.Name, len(tb), len(sm))
			}
			et, err := bs.Mean(tb)
			if err != nil {
				return study.Table{}, 0, err
			}
			es, err := bs.Mean(sm)
			if err != nil {
				return study.Table{}, 0, err
			}
			diff := make([]float64, len(tb))
			for i := range tb {
				diff[i] = tb[i] - sm[i]
			}
			ed, err := bs.Mean(diff)
			if err != nil {
				return study.Table{}, 0, err
			}
			within := "yes"
			if et.Value < es.Lo || et.Value > es.Hi {
				within = "no"
				outside++
			}
			t.Rows = append(t.Rows, []string{arm, f.Name, et.String(), es.String(), ed.String(), within})
		}
	}
	return t, outside, nil
}
