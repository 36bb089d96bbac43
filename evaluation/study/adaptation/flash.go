package adaptation

import (
	"fmt"
	"strings"

	"github.com/aware-autoscaler/aware/evaluation/metalearn"
	"github.com/aware-autoscaler/aware/evaluation/study"
)

// flashPart is what the identification cells say of the meta-training
// runs AWARE started from: a table per run, a paragraph that states
// plainly whether FLASH's similarity predicted the reward lost, and the
// headline of applications identified by the trained meta learner against
// an untrained one. ok is false when the study ran no identification.
func flashPart(c Config, plan study.Plan, runs []Run, bs study.Bootstrap) (t study.Table, para string, h study.Headline, ok bool, err error) {
	type run struct {
		seed string
		ev   *metalearn.Evaluation
	}
	var evs []run
	for i, cell := range plan {
		if cell.Arm == Identification && i < len(runs) && runs[i].Identification != nil {
			evs = append(evs, run{strings.TrimPrefix(cell.App, "meta-s"), runs[i].Identification})
		}
	}
	if len(evs) == 0 {
		return t, "", h, false, nil
	}
	t = study.Table{Title: fmt.Sprintf("FLASH on %d held-out test-split applications, per meta-training run AWARE started from", c.Identify),
		Columns: []string{"meta seed", "rounds", "identified (trained)", "identified (untrained)", "similarity vs reward lost: Spearman ρ [95 % CI]", "pairs"}}
	var trained, untrained []float64
	var groups [][]string
	var supported, against []string
	for _, r := range evs {
		ev := r.ev
		rho := fmt.Sprintf("%.3f [%.3f, %.3f]", ev.Rho, ev.RhoLo, ev.RhoHi)
		if ev.RhoError != "" {
			rho = "– (" + ev.RhoError + ")"
		}
		t.Rows = append(t.Rows, []string{r.seed, fmt.Sprint(ev.Rounds), fmt.Sprintf("%.0f %%", 100*ev.Accuracy), fmt.Sprintf("%.0f %%", 100*ev.UntrainedAcc), rho, fmt.Sprint(ev.Pairs)})
		switch {
		case ev.RhoError != "":
		case ev.RhoHi < 0:
			supported = append(supported, r.seed)
		case ev.RhoLo > 0:
			against = append(against, r.seed)
		}
		for k, hit := range ev.Hits {
			if k >= len(ev.UntrainedHits) || k >= len(ev.Apps) {
				break
			}
			trained = append(trained, b2f(hit))
			untrained = append(untrained, b2f(ev.UntrainedHits[k]))
			groups = append(groups, []string{ev.Apps[k], "meta seed " + r.seed})
		}
	}
	t.Notes = []string{"Identified: each application's query bundle (greedy episodes of the meta-trained agent at other points of the day) is nearest, by FLASH's similarity, to its own reference bundle (`aware meta eval`'s measurement); the untrained meta learner is the same network at its initial weights. ρ: for every ordered pair the agent runs one application with the other's embedding; FLASH's claim is that the more similar the embeddings, the less reward is lost (ρ < 0). The interval resamples the pairs, which share applications, so it is narrower than the applications warrant."}
	switch n := len(evs); {
	case len(supported) == n:
		para = fmt.Sprintf("FLASH: in every one of the %d meta-training runs the similarity of two applications' embeddings predicts the reward lost running one with the other's (ρ's interval below 0), as the paper claims.", n)
	case len(supported) == 0 && len(against) == 0:
		para = fmt.Sprintf("FLASH: in none of the %d meta-training runs does the similarity of two applications' embeddings predict the reward lost running one with the other's (every ρ's interval holds 0): the paper's claim is not supported here.", n)
	default:
		para = fmt.Sprintf("FLASH: the similarity of two applications' embeddings predicts the reward lost (ρ's interval below 0) in %d of the %d meta-training runs (seeds %s), and the opposite in %d (seeds %s): not a finding that holds across runs.",
			len(supported), n, orNone(supported), len(against), orNone(against))
	}
	h, err = bs.PairedHeadline(Name, "FLASH: applications identified, trained / untrained meta learner", trained, untrained, groups, 0)
	return t, para, h, true, err
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
