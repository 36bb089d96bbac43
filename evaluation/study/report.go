package study

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"
)

// Table is a report table in Markdown.
type Table struct {
	Title   string
	Columns []string
	Rows    [][]string
	// Notes follow the table (how a figure is computed, what it is
	// compared with).
	Notes []string
}

// Markdown writes t as a Markdown section.
func (t Table) Markdown(w io.Writer) error {
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "### %s\n\n", t.Title)
	}
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	row := func(cells []string) {
		b.WriteString("|")
		for i := range t.Columns {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			b.WriteString(" " + esc(c) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Columns)
	b.WriteString("|" + strings.Repeat(" --- |", len(t.Columns)) + "\n")
	for _, r := range t.Rows {
		if len(r) > len(t.Columns) {
			return fmt.Errorf("study: table %q: a row of %d cells under %d columns", t.Title, len(r), len(t.Columns))
		}
		row(r)
	}
	for _, n := range t.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Headline is one of a study's ratios beside the paper's.
type Headline struct {
	Study  string
	Figure string   // e.g. "episodes to converge, TL / AWARE"
	Ours   Estimate // the ratio and its interval
	Paper  float64  // the paper's ratio (0: the paper gives none)
	// PaperLo and PaperHi are the paper's range when it gives one (e.g.
	// "10–56×"; Paper is then a point within it); 0: a single figure.
	PaperLo, PaperHi float64
	// Improvement is the probability that a unit's numerator exceeds its
	// own denominator (ties half), averaged within each application and
	// then over applications, with its interval (N 0: not computed).
	Improvement Estimate
}

// PairedHeadline is the headline ratio mean(num)/mean(den) of paired
// units, its interval from the crossed bootstrap over the units' groups
// (groups[i] as Unit.Groups, the application first; nil: every unit its
// own draw), and the probability of improvement by application. A ratio
// over a zero mean is not measured; any other error is returned.
func (b Bootstrap) PairedHeadline(study, figure string, num, den []float64, groups [][]string, paper float64) (Headline, error) {
	h := Headline{Study: study, Figure: figure, Paper: paper}
	e, err := b.PairedRatio(num, den, groups)
	switch {
	case errors.Is(err, ErrZeroMean):
		return h, nil
	case err != nil:
		return h, fmt.Errorf("study: %s, %s: %w", study, figure, err)
	}
	h.Ours = e
	if h.Improvement, err = b.PairedImprovement(num, den, groups); err != nil {
		return h, fmt.Errorf("study: %s, %s: %w", study, figure, err)
	}
	return h, nil
}

// WithRange sets the paper's range [lo, hi] (Paper stays the point shown
// when the range is not).
func (h Headline) WithRange(lo, hi float64) Headline {
	h.PaperLo, h.PaperHi = lo, hi
	return h
}

// PaperSide is the probability that a unit lies on the paper's side of 1:
// Improvement for a paper's ratio above 1 (or none), its complement for
// one below.
func (h Headline) PaperSide() Estimate {
	e := h.Improvement
	if e.N == 0 || h.Paper == 0 || h.Paper >= 1 {
		return e
	}
	return Estimate{Value: 1 - e.Value, Lo: 1 - e.Hi, Hi: 1 - e.Lo, N: e.N, Level: e.Level}
}

// Verdict says what our interval shows against the paper's ratio (or
// range), in size as well as direction: "reaches the paper's size" when
// it lies on the paper's side of 1 and holds the paper's ratio (meets its
// range), "beyond the paper's
// size" when it lies wholly past it, "same direction, smaller" when it
// lies on the paper's side of 1 short of the paper's ratio, "reversed"
// when it lies wholly on the other side of 1, and "inconclusive" when it
// holds 1 (saying whether it holds the paper's ratio too). Without a
// paper's ratio it says on which side of 1 the interval lies.
func (h Headline) Verdict() string {
	o := h.Ours
	switch {
	case o.N == 0:
		return "not measured"
	case math.IsNaN(o.Lo) || math.IsNaN(o.Hi):
		return "inconclusive (no interval)"
	case h.Paper <= 0:
		switch {
		case o.Lo > 1:
			return "above 1 (no paper figure)"
		case o.Hi < 1:
			return "below 1 (no paper figure)"
		}
		return "inconclusive (interval holds 1; no paper figure)"
	case h.Paper == 1:
		if o.Lo <= 1 && o.Hi >= 1 {
			return "reaches the paper's size (interval holds 1)"
		}
		return "differs from the paper's 1"
	}
	up := h.Paper > 1
	lo, hi := h.Paper, h.Paper
	if h.PaperLo > 0 && h.PaperHi >= h.PaperLo {
		lo, hi = h.PaperLo, h.PaperHi
	}
	holdsPaper := o.Lo <= hi && lo <= o.Hi // the intervals overlap
	past := (up && o.Lo > hi) || (!up && o.Hi < lo)
	switch {
	case (up && o.Lo > 1) || (!up && o.Hi < 1):
		switch {
		case holdsPaper:
			return "reaches the paper's size"
		case past:
			return "beyond the paper's size"
		}
		return "same direction, smaller"
	case (up && o.Hi < 1) || (!up && o.Lo > 1):
		return "reversed"
	case holdsPaper:
		return "inconclusive (interval holds 1 and the paper's)"
	}
	return "inconclusive (interval holds 1)"
}

// HeadlineTable is the table of headline ratios against the paper's.
func HeadlineTable(hs []Headline) Table {
	t := Table{Columns: []string{"study", "figure", "ours (95 % CI)", "paper", "verdict", "P(a unit on the paper's side)"},
		Notes: []string{"Intervals resample the draws the units share (applications, and in adaptation TL's source policies and the meta-training runs), not the units (a crossed bootstrap). " +
			"Every study trains its policies from one seed, and a draw made once adds no variance, so the intervals are conditional on that seed (adaptation's carry its meta-training runs' variance: its report says how many). " +
			"The last column is the probability of improvement (Agarwal et al., NeurIPS 2021), paired: the share of units whose numerator exceeds their own denominator (ties half), averaged within each application and then over applications, taken on the paper's side of 1; 0.5 is a coin toss. " +
			"With a negative denominator (a utilisation deficit) the ratio's side of 1 and this share can disagree."}}
	for _, h := range hs {
		paper := "–"
		switch {
		case h.PaperLo > 0 && h.PaperHi > h.PaperLo:
			paper = fmt.Sprintf("%.3g–%.3g×", h.PaperLo, h.PaperHi)
		case h.Paper > 0:
			paper = fmt.Sprintf("%.3g×", h.Paper)
		}
		ours := h.Ours.String()
		if h.Ours.N > 0 {
			ours = fmt.Sprintf("%s× [%s, %s]", num(h.Ours.Value), num(h.Ours.Lo), num(h.Ours.Hi))
		}
		t.Rows = append(t.Rows, []string{h.Study, h.Figure, ours, paper, h.Verdict(), h.PaperSide().String()})
	}
	return t
}

// Meta is what results.json records besides the cells: enough to rerun
// the study and to know what it ran on.
type Meta struct {
	Study     string            `json:"study"`
	Mode      string            `json:"mode"` // quick | full
	Commit    string            `json:"commit"`
	GoVersion string            `json:"goVersion"`
	Seeds     []uint64          `json:"seeds"`
	Traces    []string          `json:"traces"`
	Versions  map[string]string `json:"versions,omitempty"`
	Command   string            `json:"command"`
	Started   time.Time         `json:"started"`
	Finished  time.Time         `json:"finished"`
}

// Commit is the git commit the binary was built from (its build info),
// else the working directory's HEAD, with "+dirty" when files differ;
// "unknown" outside a checkout.
func Commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if rev != "" {
			return rev + dirty
		}
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if err := exec.Command("git", "diff", "--quiet", "HEAD").Run(); err != nil {
		rev += "+dirty"
	}
	return rev
}

// Results is results.json: the metadata and every cell's figures.
type Results[R any] struct {
	Meta  Meta            `json:"meta"`
	Cells []CellResult[R] `json:"cells"`
}

// CellResult is a cell and its result.
type CellResult[R any] struct {
	Cell   Cell `json:"cell"`
	Result R    `json:"result"`
}

// WriteResults writes results.json for the plan's results (in plan order).
func WriteResults[R any](path string, meta Meta, plan Plan, results []R) error {
	if len(plan) != len(results) {
		return fmt.Errorf("study: %d results for %d cells", len(results), len(plan))
	}
	out := Results[R]{Meta: meta, Cells: make([]CellResult[R], len(plan))}
	for i, c := range plan {
		out.Cells[i] = CellResult[R]{Cell: c, Result: results[i]}
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return fmt.Errorf("study: %w", err)
	}
	return writeAtomic(path, append(b, '\n'))
}
