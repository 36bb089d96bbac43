package study

import (
	"encoding/json"
	"fmt"
	"io"
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
}

// Verdict says whether our interval shows the paper's direction: above 1
// when the paper's ratio is above 1 (and below when below), reversed when
// it lies wholly on the other side, inconclusive when it holds 1.
func (h Headline) Verdict() string {
	if h.Ours.N == 0 {
		return "not measured"
	}
	up := h.Paper >= 1
	switch {
	case h.Ours.Lo > 1 && up, h.Ours.Hi < 1 && !up:
		return "same direction"
	case h.Ours.Hi < 1 && up, h.Ours.Lo > 1 && !up:
		return "reversed"
	default:
		return "inconclusive (interval holds 1)"
	}
}

// HeadlineTable is the table of headline ratios against the paper's.
func HeadlineTable(hs []Headline) Table {
	t := Table{Columns: []string{"study", "figure", "ours (95 % CI)", "paper", "direction"}}
	for _, h := range hs {
		paper := "–"
		if h.Paper > 0 {
			paper = fmt.Sprintf("%.3g×", h.Paper)
		}
		ours := h.Ours.String()
		if h.Ours.N > 0 {
			ours = fmt.Sprintf("%s× [%s, %s]", num(h.Ours.Value), num(h.Ours.Lo), num(h.Ours.Hi))
		}
		t.Rows = append(t.Rows, []string{h.Study, h.Figure, ours, paper, h.Verdict()})
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
