package study

import (
	"fmt"
	"math"
	"slices"
)

// Win is an agent arm held against the tuned rule-based autoscaler on the
// same units (the same applications, episodes and scenarios): the win
// rule. An agent beats the rule-based autoscaler only with at least its
// reward and at most its SLO violations, both shown with intervals; more
// reward bought with more violations is no win (a platform team would not
// deploy it).
type Win struct {
	Study, Arm string
	// Window names the episodes compared ("while adapting", "after the
	// switch").
	Window string
	// Reward and SLO are the agent's means over units, RewardIQM its
	// interquartile mean, RuleReward and RuleSLO the rule-based
	// autoscaler's; all with the crossed bootstrap's intervals.
	Reward, RewardIQM, SLO, RuleReward, RuleSLO Estimate
	// RewardDiff and SLODiff are agent − rule-based over paired units.
	RewardDiff, SLODiff Estimate
	// Apps is the share of applications on which the agent's mean reward
	// is at least the rule-based autoscaler's and its mean SLO violations
	// at most its, with an interval that redraws the applications.
	Apps Estimate
}

// WinRule holds an agent's per-unit reward and SLO violations against
// the rule-based autoscaler's on the same units; groups[i] are unit i's
// draws as in PairedRatio, the application first.
func (b Bootstrap) WinRule(study, arm, window string, reward, ruleReward, slo, ruleSLO []float64, groups [][]string) (Win, error) {
	w := Win{Study: study, Arm: arm, Window: window}
	n := len(reward)
	if n == 0 {
		return w, ErrNoData
	}
	if len(ruleReward) != n || len(slo) != n || len(ruleSLO) != n || len(groups) != n {
		return w, fmt.Errorf("study: win rule for %s: %d, %d, %d and %d figures for %d units with %d groups", arm, n, len(ruleReward), len(slo), len(ruleSLO), n, len(groups))
	}
	units := func(xs []float64) []Unit {
		out := make([]Unit, len(xs))
		for i, x := range xs {
			out[i] = Unit{Value: x, Groups: groups[i]}
		}
		return out
	}
	diff := func(a, b []float64) []float64 {
		out := make([]float64, len(a))
		for i := range a {
			out[i] = a[i] - b[i]
		}
		return out
	}
	for _, e := range []struct {
		dst  *Estimate
		xs   []float64
		stat Stat
	}{
		{&w.Reward, reward, WeightedMean}, {&w.RewardIQM, reward, WeightedIQM}, {&w.SLO, slo, WeightedMean},
		{&w.RuleReward, ruleReward, WeightedMean}, {&w.RuleSLO, ruleSLO, WeightedMean},
		{&w.RewardDiff, diff(reward, ruleReward), WeightedMean}, {&w.SLODiff, diff(slo, ruleSLO), WeightedMean},
	} {
		est, err := b.Crossed(units(e.xs), e.stat)
		if err != nil {
			return w, fmt.Errorf("study: win rule for %s: %w", arm, err)
		}
		*e.dst = est
	}
	type sums struct{ r, rr, s, rs, n float64 }
	byApp := map[string]*sums{}
	for i, g := range groups {
		if len(g) == 0 {
			return w, fmt.Errorf("study: win rule for %s: unit %d has no application", arm, i)
		}
		a := byApp[g[0]]
		if a == nil {
			a = &sums{}
			byApp[g[0]] = a
		}
		a.r, a.rr, a.s, a.rs, a.n = a.r+reward[i], a.rr+ruleReward[i], a.s+slo[i], a.rs+ruleSLO[i], a.n+1
	}
	apps := make([]string, 0, len(byApp))
	for a := range byApp {
		apps = append(apps, a)
	}
	slices.Sort(apps)
	won := make([]float64, len(apps))
	for i, a := range apps {
		s := byApp[a]
		if s.r >= s.rr && s.s <= s.rs {
			won[i] = 1
		}
	}
	var err error
	if w.Apps, err = b.Mean(won); err != nil {
		return w, fmt.Errorf("study: win rule for %s: %w", arm, err)
	}
	return w, nil
}

// Verdict applies the win rule to the intervals: "beats it" only when the
// reward difference's interval lies above 0 and the SLO violations
// difference's does not rise above 0; "more reward, more SLO violations"
// when both lie above 0; "behind it" when the reward difference lies
// below 0, or the violations' above 0 without more reward; "no
// difference shown" otherwise.
func (w Win) Verdict() string {
	r, s := w.RewardDiff, w.SLODiff
	switch {
	case r.N == 0 || math.IsNaN(r.Lo) || math.IsNaN(s.Lo):
		return "not measured"
	case r.Lo > 0 && s.Hi <= 0:
		return "beats it"
	case r.Lo > 0 && s.Lo > 0:
		return "more reward, more SLO violations: no win"
	case r.Lo > 0:
		return "more reward; SLO violations not shown to be at most its"
	case r.Hi < 0:
		return "behind it"
	case s.Lo > 0:
		return "behind it (more SLO violations)"
	}
	return "no difference shown"
}

// WinTable is the win rule's table.
func WinTable(ws []Win) Table {
	t := Table{Columns: []string{"study", "arm", "episodes", "reward", "reward IQM", "rule-based reward", "SLO violations / episode", "rule-based's", "reward − rule-based", "violations − rule-based", "applications won", "verdict"},
		Notes: []string{"The win rule: an agent beats the tuned rule-based autoscaler (HPA+VPA) only with at least its reward and at most its SLO violations, both with intervals (the crossed bootstrap's, paired units); more reward bought with more violations is no win. Applications won: the share of applications on which the agent's mean reward is at least the rule-based autoscaler's and its mean violations at most its. The reward IQM is the interquartile mean over units (Agarwal et al., NeurIPS 2021)."}}
	for _, w := range ws {
		t.Rows = append(t.Rows, []string{w.Study, w.Arm, w.Window, w.Reward.String(), w.RewardIQM.String(), w.RuleReward.String(), w.SLO.String(), w.RuleSLO.String(),
			w.RewardDiff.String(), w.SLODiff.String(), w.Apps.String(), w.Verdict()})
	}
	return t
}
