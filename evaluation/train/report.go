package train

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aware-autoscaler/aware/evaluation/plot"
)

// Report is the outcome of Compare with what is needed to reproduce it.
type Report struct {
	Command  string   `json:"command"`
	Seed     uint64   `json:"seed"`
	Baseline string   `json:"baseline"`
	Shapes   string   `json:"shapes"`
	Results  []Result `json:"results"`
}

// Tally counts, for one algorithm, the cases where it wins.
type Tally struct {
	Algo                                string
	Wins, Cases                         int
	AgentReward, BaselineReward         float64 // means over cases
	AgentViolations, BaselineViolations float64 // means over cases, steps per episode
}

// Tallies summarises r per algorithm, in the order algorithms first appear.
func (r Report) Tallies() []Tally {
	var out []Tally
	idx := map[string]int{}
	for _, x := range r.Results {
		i, ok := idx[x.Algo]
		if !ok {
			i = len(out)
			idx[x.Algo] = i
			out = append(out, Tally{Algo: x.Algo})
		}
		t := &out[i]
		t.Cases++
		if x.Wins {
			t.Wins++
		}
		t.AgentReward += x.Agent.Reward
		t.BaselineReward += x.Baseline.Reward
		t.AgentViolations += x.Agent.SLOViolations
		t.BaselineViolations += x.Baseline.SLOViolations
	}
	for i := range out {
		n := float64(out[i].Cases)
		out[i].AgentReward /= n
		out[i].BaselineReward /= n
		out[i].AgentViolations /= n
		out[i].BaselineViolations /= n
	}
	return out
}

// WriteMarkdown writes the per-case table and the per-algorithm tally.
func (r Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Agents against %s on the same trace window (`%s`, shapes: %s). Reward and SLO violations are per 100-step episode, means of the scored episodes; a win is a reward at least as high with no more violations.\n\n", r.Baseline, r.Command, r.Shapes)
	fmt.Fprintf(&b, "| app | chain | SLO | algorithm | episodes | reward agent / %[1]s | SLO violations agent / %[1]s | CPU util agent / %[1]s | memory util agent / %[1]s | allocation agent / %[1]s | win |\n", r.Baseline)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Results {
		win := "no"
		if x.Wins {
			win = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %.1f / %.1f | %.1f / %.1f | %.0f%% / %.0f%% | %.0f%% / %.0f%% | %s / %s | %s |\n",
			x.App, x.Chain, x.SLO, x.Algo, x.Episodes, x.Agent.Reward, x.Baseline.Reward,
			x.Agent.SLOViolations, x.Baseline.SLOViolations,
			100*x.Agent.CPUUtil, 100*x.Baseline.CPUUtil, 100*x.Agent.MemoryUtil, 100*x.Baseline.MemoryUtil,
			alloc(x.Agent), alloc(x.Baseline), win)
	}
	b.WriteString("\n| algorithm | wins | mean reward agent / baseline | mean SLO violations agent / baseline |\n|---|---|---|---|\n")
	for _, t := range r.Tallies() {
		fmt.Fprintf(&b, "| %s | %d of %d | %.1f / %.1f | %.1f / %.1f |\n", t.Algo, t.Wins, t.Cases, t.AgentReward, t.BaselineReward, t.AgentViolations, t.BaselineViolations)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func alloc(s Score) string {
	return fmt.Sprintf("%.1f×%.2f×%.0fMi", s.Replicas, s.CPU, s.Memory/(1<<20))
}

// Save writes results.json, results.md and one learning-curve figure per
// algorithm (curves-<algo>.png: each case's training reward minus the
// baseline's scored reward) into dir.
func (r Report) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	for _, t := range r.Tallies() {
		c := plot.Curves{
			Title:  fmt.Sprintf("%s: training reward minus %s", t.Algo, r.Baseline),
			XLabel: "episode", YLabel: "episode reward − baseline", Smooth: 20,
			References: []plot.Reference{{Name: r.Baseline, Y: 0}},
		}
		for _, x := range r.Results {
			if x.Algo != t.Algo {
				continue
			}
			y := make([]float64, len(x.Curve))
			for i, v := range x.Curve {
				y[i] = v - x.Baseline.Reward
			}
			c.Series = append(c.Series, plot.Series{Name: x.App, Y: y})
		}
		if err := plot.Save(filepath.Join(dir, "curves-"+t.Algo+".png"), c); err != nil {
			return err
		}
	}
	return nil
}
