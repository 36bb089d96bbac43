package adaptation

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aware-autoscaler/aware/evaluation/plot"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
)

// Unit is one application of one test: the methods' figures against
// the same reference.
type Unit struct {
	Test int    `json:"test"`
	App  string `json:"app"`
	// Reference is the reward the methods converge to: the best of their
	// final windows' mean rewards.
	Reference float64 `json:"referenceReward"`
	// RefCPU and RefMemory are the utilisations of the converged policy
	// (its greedy score, or the final window of the best method).
	RefCPU    float64            `json:"referenceCPUUtil"`
	RefMemory float64            `json:"referenceMemoryUtil"`
	Arms      map[string]Figures `json:"arms"`
}

// Figures is one arm's figures on a unit.
type Figures struct {
	// Episodes to converge (the budget when it never did: Censored).
	Episodes int  `json:"episodesToConverge"`
	Censored bool `json:"censored,omitempty"`
	// Plateau is the episodes to the arm's own plateau (Rule.Plateau;
	// the budget when it never did: PlateauCensored).
	Plateau         int  `json:"episodesToPlateau"`
	PlateauCensored bool `json:"plateauCensored,omitempty"`
	// ToR is the episodes until the arm's trailing mean stays within the
	// rule's tolerance of R, the converged reference policy's greedy
	// reward (Config.Converged > 0; the budget when it never did:
	// ToRCensored).
	ToR         int     `json:"episodesToR,omitempty"`
	ToRCensored bool    `json:"toRCensored,omitempty"`
	Final       float64 `json:"finalReward"`
	Reward      float64 `json:"meanReward"`
	Seconds     float64 `json:"seconds"`
	CPUDef      float64 `json:"cpuUtilDeficit"`
	MemDef      float64 `json:"memoryUtilDeficit"`
	SLO         float64 `json:"sloViolationsPerEpisode"`
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func meanInt(x []int) float64 {
	s := 0
	for _, v := range x {
		s += v
	}
	return float64(s) / float64(len(x))
}

// Units computes every unit from the cells' results (in plan order).
func Units(c Config, plan study.Plan, runs []Run) ([]Unit, error) {
	if len(plan) != len(runs) {
		return nil, fmt.Errorf("adaptation: %d results for %d cells", len(runs), len(plan))
	}
	type key struct {
		test int
		app  string
	}
	byUnit := map[key]map[string]Run{}
	var order []key
	for i, cell := range plan {
		if cell.Arm == Identification {
			continue // a meta-training run's evaluation, not a unit
		}
		k := key{cell.Test, cell.App}
		if byUnit[k] == nil {
			byUnit[k] = map[string]Run{}
			order = append(order, k)
		}
		if len(runs[i].Rewards) < c.Rule.Window {
			return nil, fmt.Errorf("adaptation: cell %s holds %d episodes, fewer than the convergence window %d", cell.Key(), len(runs[i].Rewards), c.Rule.Window)
		}
		byUnit[k][cell.Arm] = runs[i]
	}
	var out []Unit
	for _, k := range order {
		rs := byUnit[k]
		u := Unit{Test: k.test, App: k.app, Reference: math.Inf(-1), Arms: map[string]Figures{}}
		best := ""
		for _, m := range methods {
			r, ok := rs[m]
			if !ok {
				return nil, fmt.Errorf("adaptation: test %d, %s: no %s cell", k.test, k.app, m)
			}
			f, err := c.Rule.Final(r.Rewards)
			if err != nil {
				return nil, err
			}
			if f > u.Reference {
				u.Reference, best = f, m
			}
		}
		w := c.Rule.Window
		if conv := rs[AWARE].Converged; conv != nil {
			u.RefCPU, u.RefMemory = conv.CPUUtil, conv.MemoryUtil
		} else {
			b := rs[best]
			u.RefCPU, u.RefMemory = mean(b.CPUUtil[len(b.CPUUtil)-w:]), mean(b.MemoryUtil[len(b.MemoryUtil)-w:])
		}
		for _, arm := range append(slices.Clone(Arms), Ablations...) {
			r, ok := rs[arm]
			if !ok {
				if slices.Contains(Ablations, arm) {
					continue // not every test runs the ablations
				}
				return nil, fmt.Errorf("adaptation: test %d, %s: no %s cell", k.test, k.app, arm)
			}
			a := Figures{Reward: mean(r.Rewards), Seconds: r.Seconds, CPUDef: u.RefCPU - mean(r.CPUUtil), MemDef: u.RefMemory - mean(r.MemoryUtil), SLO: meanInt(r.SLOViolations)}
			a.Final, _ = c.Rule.Final(r.Rewards)
			if arm != Rule {
				n, ok, err := c.Rule.Episodes(r.Rewards, u.Reference)
				if err != nil {
					return nil, err
				}
				a.Episodes, a.Censored = n, !ok
				if len(r.Rewards) >= 2*c.Plateau.Window {
					if n, ok, err = c.Plateau.Plateau(r.Rewards); err != nil {
						return nil, err
					}
					a.Plateau, a.PlateauCensored = n, !ok
				}
				if conv := rs[AWARE].Converged; conv != nil {
					if n, ok, err = c.Rule.Episodes(r.Rewards, conv.Reward); err != nil {
						return nil, err
					}
					a.ToR, a.ToRCensored = n, !ok
				}
			}
			u.Arms[arm] = a
		}
		out = append(out, u)
	}
	return out, nil
}

// column is one figure of the summary table.
type column struct {
	name string
	get  func(Figures) float64
	// methodsOnly: the rule-based arm does not adapt.
	methodsOnly bool
}

var columns = []column{
	{"episodes to converge", func(a Figures) float64 { return float64(a.Episodes) }, true},
	{"CPU-s adapting", func(a Figures) float64 { return a.Seconds }, true},
	{"CPU util deficit (pp)", func(a Figures) float64 { return 100 * a.CPUDef }, false},
	{"memory util deficit (pp)", func(a Figures) float64 { return 100 * a.MemDef }, false},
	{"SLO violations / episode", func(a Figures) float64 { return a.SLO }, false},
	{"mean reward", func(a Figures) float64 { return a.Reward }, false},
}

func values(units []Unit, arm string, get func(Figures) float64) []float64 {
	out := make([]float64, len(units))
	for i, u := range units {
		out[i] = get(u.Arms[arm])
	}
	return out
}

// Render is the study's report, with its plots written into dir.
func Render(c Config, plan study.Plan, tests []Test, runs []Run, traces []string, bs study.Bootstrap, dir string) (study.Report, error) {
	units, err := Units(c, plan, runs)
	if err != nil {
		return study.Report{}, err
	}
	rep := study.Report{Title: "Adaptation to new applications (paper §5.2)"}
	ref := "the best final window of the three methods on that application (its utilisation: that method's final window)"
	if c.Converged > 0 {
		ref = fmt.Sprintf("the best final window of the three methods on that application; utilisation deficits against a DDPG policy trained from scratch for %d episodes on it (greedy, %d episodes)", c.Converged, lab.GreedyEpisodes)
	}
	sources := map[string]bool{}
	for _, t := range tests {
		sources[t.Source] = true
	}
	from := fmt.Sprintf("a meta-training run over %d train-split applications × %d rounds (bundles of %d)", c.Meta.Apps, c.Meta.Rounds, c.Meta.M)
	if n := min(c.MetaSeeds, len(tests)); n > 1 && c.From == "" {
		from = fmt.Sprintf("one of %d meta-training runs over %d train-split applications × %d rounds (bundles of %d; seeds %d–%d, test t from seed %d + (t−1) mod %d)",
			n, c.Meta.Apps, c.Meta.Rounds, c.Meta.M, c.Meta.Seed, c.Meta.Seed+uint64(n)-1, c.Meta.Seed, n)
	}
	if c.From != "" {
		from = fmt.Sprintf("the `aware meta train` run in %s (bundles of %d)", c.From, c.Meta.M)
	}
	rep.Paragraphs = []string{
		fmt.Sprintf("%d A/B tests (seed %d), each adapting to %d test-split applications drawn from its seed: %d units (test × application). Every method has %d episodes per application, reset with the same seeds; TL's and TL+'s source policies train %d episodes on the test's train-split application (%d distinct); AWARE starts from %s.",
			len(tests), c.Seed, c.Apps, len(units), c.Episodes, c.Source, len(sources), from),
		fmt.Sprintf("Converged: from the first episode on which the trailing %d episodes' mean reward stays within %.0f %% of the reference, %s; a method that never stays there counts the whole budget (censored). CPU-s adapting is the wall time of the cell's one goroutine, the meta-training and source training not included.",
			c.Rule.Window, 100*c.Rule.Tolerance, ref),
		explorationNote(c, plan, runs),
		fmt.Sprintf("Figures are means over units with %.0f %% percentile-bootstrap intervals (%d resamples); ratios are ratios of means over paired units, their applications, TL's source policies and the meta-training runs resampled rather than the units (a crossed bootstrap). Load: %s.", 100*bs.Level, bs.Resamples, strings.Join(traces, "; ")),
	}
	if need := train.DefaultEpisodes(train.DDPG); c.Source < need {
		rep.Paragraphs = append(rep.Paragraphs, fmt.Sprintf("Note: DDPG needs about %d episodes to converge on these applications (docs/agents.md); TL's and TL+'s source policies trained %d, so TL starts from a less trained policy than the paper's, and a quick run shows directions, not the paper's magnitudes.", need, c.Source))
	}
	if n := lab.ConvergedNote(c.Converged); c.Converged > 0 && n != "" {
		rep.Paragraphs = append(rep.Paragraphs, n)
	}
	t := study.Table{Title: "Per arm, mean [95 % CI] over units", Columns: []string{"arm"}}
	for _, col := range columns {
		t.Columns = append(t.Columns, col.name)
	}
	t.Columns = append(t.Columns, "never converged")
	for _, arm := range Arms {
		row := []string{arm}
		for _, col := range columns {
			if col.methodsOnly && arm == Rule {
				row = append(row, "–")
				continue
			}
			e, err := bs.Mean(values(units, arm, col.get))
			if err != nil {
				return study.Report{}, err
			}
			row = append(row, e.String())
		}
		censored := "–"
		if arm != Rule {
			n := 0
			for _, u := range units {
				if u.Arms[arm].Censored {
					n++
				}
			}
			censored = fmt.Sprintf("%d of %d", n, len(units))
		}
		t.Rows = append(t.Rows, append(row, censored))
	}
	t.Notes = []string{"The rule-based row is the tuned HPA+VPA (the highest CPU target meeting the SLO over the day before, VPA auto) on the same episodes: it does not adapt, so it has no episodes to converge."}
	rep.Tables = append(rep.Tables, t)

	if len(units) <= 40 {
		pt := study.Table{Title: "Per application: episodes to converge (* never; final reward)", Columns: []string{"test", "application", "reference reward"}}
		pt.Columns = append(pt.Columns, methods...)
		for _, u := range units {
			row := []string{fmt.Sprint(u.Test), u.App, fmt.Sprintf("%.1f", u.Reference)}
			for _, m := range methods {
				a := u.Arms[m]
				mark := ""
				if a.Censored {
					mark = "*"
				}
				row = append(row, fmt.Sprintf("%d%s (%.1f)", a.Episodes, mark, a.Final))
			}
			pt.Rows = append(pt.Rows, row)
		}
		rep.Tables = append(rep.Tables, pt)
	}

	// A unit is an application under a test: tests share applications,
	// and a test's units share TL's source policy. Both are draws.
	groups := unitGroups(tests, units)
	type ratio struct {
		figure   string
		num, den string
		get      func(Figures) float64
		paper    float64
		lo, hi   float64 // the paper's range, if any
	}
	for _, r := range []ratio{
		{"episodes to converge, TL / AWARE", TL, AWARE, func(a Figures) float64 { return float64(a.Episodes) }, 5.5, 0, 0},
		{"episodes to converge, TL+ / AWARE", TLPlus, AWARE, func(a Figures) float64 { return float64(a.Episodes) }, 4.6, 0, 0},
		{"episodes to its own plateau, TL / AWARE", TL, AWARE, func(a Figures) float64 { return float64(a.Plateau) }, 5.5, 0, 0},
		{"CPU-s adapting, TL / AWARE (paper: 68–72 % saved)", TL, AWARE, func(a Figures) float64 { return a.Seconds }, 1 / (1 - 0.70), 1 / (1 - 0.68), 1 / (1 - 0.72)},
		{"CPU util deficit, TL+ / AWARE", TLPlus, AWARE, func(a Figures) float64 { return a.CPUDef }, 4.6, 0, 0},
		{"memory util deficit, TL+ / AWARE", TLPlus, AWARE, func(a Figures) float64 { return a.MemDef }, 6.2, 0, 0},
		{"SLO violations, TL+ / AWARE", TLPlus, AWARE, func(a Figures) float64 { return a.SLO }, 7.1, 0, 0},
	} {
		h, err := bs.PairedHeadline(Name, r.figure, values(units, r.num, r.get), values(units, r.den, r.get), groups, r.paper)
		if err != nil {
			return study.Report{}, err
		}
		rep.Headlines = append(rep.Headlines, h.WithRange(r.lo, r.hi))
	}

	figs := []struct {
		file, title, x string
		get            func(Figures) float64
		arms           []string
	}{
		{"episodes-cdf.png", "Episodes to converge", "episodes", func(a Figures) float64 { return float64(a.Episodes) }, methods},
		{"cpu-seconds-cdf.png", "CPU-seconds adapting", "CPU-s", func(a Figures) float64 { return a.Seconds }, methods},
		{"cpu-deficit-cdf.png", "CPU utilisation deficit vs the converged policy", "percentage points", func(a Figures) float64 { return 100 * a.CPUDef }, Arms},
		{"memory-deficit-cdf.png", "Memory utilisation deficit vs the converged policy", "percentage points", func(a Figures) float64 { return 100 * a.MemDef }, Arms},
	}
	for _, f := range figs {
		var samples []plot.Sample
		for _, arm := range f.arms {
			samples = append(samples, plot.Sample{Name: arm, Values: values(units, arm, f.get)})
		}
		if err := plot.SaveCDF(filepath.Join(dir, f.file), plot.CDF{Title: f.title, XLabel: f.x, Samples: samples}); err != nil {
			return study.Report{}, err
		}
		rep.Figures = append(rep.Figures, study.Figure{File: f.file, Caption: f.title + ", CDF over units (as the paper's Fig. 8)"})
	}
	if ft, para, h, ok, err := flashPart(c, plan, runs, bs); err != nil {
		return study.Report{}, err
	} else if ok {
		rep.Paragraphs = append(rep.Paragraphs, para)
		rep.Tables = append(rep.Tables, ft)
		rep.Headlines = append(rep.Headlines, h)
	}
	for _, arm := range methods {
		w, err := bs.WinRule(Name, arm, fmt.Sprintf("%d adapting", c.Episodes), values(units, arm, func(a Figures) float64 { return a.Reward }), values(units, Rule, func(a Figures) float64 { return a.Reward }),
			values(units, arm, func(a Figures) float64 { return a.SLO }), values(units, Rule, func(a Figures) float64 { return a.SLO }), groups)
		if err != nil {
			return study.Report{}, err
		}
		rep.Wins = append(rep.Wins, w)
	}
	km, err := survival(c, units, filepath.Join(dir, "episodes-km.png"))
	if err != nil {
		return study.Report{}, err
	}
	rep.Tables = append(rep.Tables, km)
	rep.Figures = append(rep.Figures, study.Figure{File: "episodes-km.png", Caption: "Share of units not yet converged after each episode (Kaplan–Meier; censored at the budget)"})
	if abl, ok, err := ablationTable(c, tests, units, bs); err != nil {
		return study.Report{}, err
	} else if ok {
		rep.Tables = append(rep.Tables, abl)
	}
	curves := plot.Curves{Title: "Reward while adapting, mean over units", XLabel: "episode", YLabel: "episode reward", Smooth: 5}
	for _, arm := range append(slices.Clone(Arms), Ablations...) {
		sum := make([]float64, c.Episodes)
		n := 0
		for i, cell := range plan {
			if cell.Arm != arm {
				continue
			}
			for k := range sum {
				sum[k] += runs[i].Rewards[k]
			}
			n++
		}
		if n == 0 {
			continue // an ablation no test ran
		}
		for k := range sum {
			sum[k] /= float64(n)
		}
		curves.Series = append(curves.Series, plot.Series{Name: arm, Y: sum})
	}
	if err := plot.Save(filepath.Join(dir, "reward.png"), curves); err != nil {
		return study.Report{}, err
	}
	rep.Figures = append(rep.Figures, study.Figure{File: "reward.png", Caption: "Reward per adaptation episode, mean over units (the ablations' over the units that ran them)"})
	return rep, nil
}
