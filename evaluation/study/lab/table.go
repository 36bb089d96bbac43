package lab

import "github.com/aware-autoscaler/aware/evaluation/study"

// Values gives the units' figure f for arm, in unit order.
type Values func(arm string, f Figure) []float64

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

// Headlines computes the ratios (a ratio over a zero mean is reported as
// not measured).
func Headlines(name string, rs []Ratio, bs study.Bootstrap, values Values) []study.Headline {
	var out []study.Headline
	for _, r := range rs {
		e, err := bs.Ratio(values(r.Num, r.Of), values(r.Den, r.Of), true)
		if err != nil {
			e = study.Estimate{}
		}
		out = append(out, study.Headline{Study: name, Figure: r.Figure, Ours: e, Paper: r.Paper})
	}
	return out
}
