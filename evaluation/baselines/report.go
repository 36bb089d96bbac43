package baselines

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/aware-autoscaler/aware/internal/quantile"
)

// Report is a whole run: what was simulated and each baseline's result.
type Report struct {
	Command     string            `json:"command"`
	Apps        int               `json:"apps"`
	Seed        uint64            `json:"seed"`
	Steps       int               `json:"steps"`
	StepSeconds float64           `json:"stepSeconds"`
	Shapes      map[string]string `json:"shapes"`
	// ShapeStats describe each load shape at the step (optional).
	ShapeStats map[string]ShapeStats `json:"shapeStats,omitempty"`
	Results    []Result              `json:"results"`
}

// ShapeStats describe a load shape of mean 1: its p95 and the share of its
// steps below 5 % of the mean (idle steps, whose utilisation is near zero
// whatever the autoscaler, with at least one pod).
type ShapeStats struct {
	P95  float64 `json:"p95"`
	Idle float64 `json:"idle"`
}

// StatsOf describes a load shape of mean 1.
func StatsOf(shape []float64) ShapeStats {
	if len(shape) == 0 {
		return ShapeStats{}
	}
	idle := 0
	for _, v := range shape {
		if v < 0.05 {
			idle++
		}
	}
	return ShapeStats{P95: quantile.NearestRank(shape, 0.95), Idle: float64(idle) / float64(len(shape))}
}

// WriteMarkdown prints the report as a Markdown table with its context.
func (r Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "Baselines on the simulator: %d applications, %d steps of %gs (%.1f h), seed %d.\n\n",
		r.Apps, r.Steps, r.StepSeconds, float64(r.Steps)*r.StepSeconds/3600, r.Seed)
	const header = "| mean reward / step | reward / 100-step episode | CPU util | memory util | SLO violations | OOM kills | dropped | replicas | CPU cores |"
	const rule = "|---|---|---|---|---|---|---|---|---|"
	row := func(x Result) string {
		return fmt.Sprintf("| %.3f | %.1f | %.1f%% | %.1f%% | %.1f%% | %d | %.2f%% | %.2f | %.2f |",
			x.MeanReward, x.EpisodeReward, 100*x.CPUUtil, 100*x.MemoryUtil, 100*x.SLOViolations,
			x.OOMKills, 100*x.Dropped, x.Replicas, x.CPUCores)
	}
	fmt.Fprintln(w, "| autoscaler "+header)
	fmt.Fprintln(w, "|---"+rule)
	for _, x := range r.Results {
		fmt.Fprintf(w, "| %s %s\n", x.Baseline, row(x))
	}
	fmt.Fprintln(w, "\nSpread over applications: p10 / p50 / p90 of each application's mean.")
	fmt.Fprintln(w, "\n| autoscaler | CPU util | memory util | SLO violations |\n|---|---|---|---|")
	pct := func(q Quantiles) string { return fmt.Sprintf("%.1f / %.1f / %.1f %%", 100*q.P10, 100*q.P50, 100*q.P90) }
	for _, x := range r.Results {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", x.Baseline, pct(x.Spread.CPUUtil), pct(x.Spread.MemoryUtil), pct(x.Spread.SLOViolations))
	}
	var grouped bool
	for _, x := range r.Results {
		if len(x.Groups) > 0 {
			if !grouped {
				fmt.Fprintln(w, "\nBy load source:")
				fmt.Fprintln(w, "\n| autoscaler | source | apps "+header)
				fmt.Fprintln(w, "|---|---|---"+rule)
				grouped = true
			}
			for _, g := range slices.Sorted(maps.Keys(x.Groups)) {
				fmt.Fprintf(w, "| %s | %s | %d %s\n", x.Baseline, g, x.Groups[g].Apps, row(x.Groups[g]))
			}
		}
	}
	srcs := make([]string, 0, len(r.Shapes))
	for s := range r.Shapes {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	fmt.Fprint(w, "\nLoad shapes:")
	for _, s := range srcs {
		fmt.Fprintf(w, " %s (%s", s, r.Shapes[s])
		if st, ok := r.ShapeStats[s]; ok {
			fmt.Fprintf(w, "; p95 %.2f × the mean, %.1f %% of steps idle", st.P95, 100*st.Idle)
		}
		fmt.Fprint(w, ")")
	}
	_, err := fmt.Fprintf(w, ".\nReward per step is α·SP·2 + (1−α)·(CPU util + memory util), α = 0.5, in [0, 2]; utilisation is usage over the limits of the desired pods; an SLO violation is a step with SP < 1. Reproduce with `%s`.\n", r.Command)
	return err
}

// Save writes results.json and results.md into dir.
func (r Report) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "results.md"))
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := r.WriteMarkdown(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
