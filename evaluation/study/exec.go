package study

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Spec is one run of a study: its plan, how to run a cell and how to
// render the results.
type Spec[R any] struct {
	// Name is the study's (adaptation, serving, …); Dir holds its store,
	// results.json, report.md and plots.
	Name, Dir string
	// Config is the study's configuration, recorded in Dir/config.json:
	// a folder holding cells of another configuration is refused rather
	// than mixed with them.
	Config any
	Plan   Plan
	// Shard is the share of Plan this run computes (All: the whole plan,
	// then the report); a shard writes its cells only, and Merge and a
	// run with Cell nil put the shards together.
	Shard   ShardSpec
	Workers int
	// Progress, when set, receives the progress lines.
	Progress io.Writer
	// Cell runs one cell; nil renders what the store holds (after Merge),
	// refusing a plan with cells missing.
	Cell func(context.Context, Cell) (R, error)
	// Render turns every cell's result (in plan order) into the report,
	// writing its plots into dir.
	Render func(dir string, results []R) (Report, error)
	// Meta is recorded in results.json (Study, Started and Finished are
	// set here).
	Meta Meta
}

// ErrShard says a shard finished: its cells are in the store, and the
// report waits for the other shards (Merge).
var ErrShard = errors.New("shard done: merge the shards' folders to report")

// Execute runs the spec's cells that are not done yet and, for the whole
// plan, writes results.json and report.md and returns the report. A shard
// returns ErrShard after its cells are saved.
func Execute[R any](ctx context.Context, s Spec[R]) (Report, error) {
	if err := s.Plan.Validate(); err != nil {
		return Report{}, fmt.Errorf("study %s: %w", s.Name, err)
	}
	store, err := OpenStore(s.Dir)
	if err != nil {
		return Report{}, err
	}
	if err := checkConfig(filepath.Join(s.Dir, "config.json"), s.Config); err != nil {
		return Report{}, fmt.Errorf("study %s: %w", s.Name, err)
	}
	if s.Shard == (ShardSpec{}) {
		s.Shard = All
	}
	s.Meta.Study, s.Meta.Started = s.Name, time.Now().UTC()
	old, now, err := recordCommit(filepath.Join(s.Dir, "commit"))
	if err != nil {
		return Report{}, err
	}
	var progress *Progress
	if s.Progress != nil {
		progress = &Progress{W: s.Progress, Name: s.Name}
		if old != now {
			fmt.Fprintf(s.Progress, "%s: the cells already in %s were computed at commit %s, this run is at %s: they are kept; remove the folder to recompute them\n", s.Name, s.Dir, old, now)
		}
	}
	var results []R
	if s.Cell == nil {
		if missing := store.Missing(s.Plan); len(missing) > 0 {
			return Report{}, fmt.Errorf("study %s: %s holds %d of the plan's %d cells (the first missing: %s): run or merge the other shards",
				s.Name, s.Dir, len(s.Plan)-len(missing), len(s.Plan), missing[0].Key())
		}
		results = make([]R, len(s.Plan))
		for i, c := range s.Plan {
			if err := store.Get(c, &results[i]); err != nil {
				return Report{}, err
			}
		}
	} else {
		// Run reads every cell of its plan back from the store: for the
		// whole plan, those are the report's results.
		if results, err = Run(ctx, store, s.Plan.Shard(s.Shard), s.Workers, progress, s.Cell); err != nil {
			return Report{}, err
		}
		if s.Shard != All {
			return Report{}, fmt.Errorf("study %s %s: %w", s.Name, s.Shard, ErrShard)
		}
	}
	rep, err := s.Render(s.Dir, results)
	if err != nil {
		return Report{}, fmt.Errorf("study %s: report: %w", s.Name, err)
	}
	s.Meta.Finished = time.Now().UTC()
	if err := WriteResults(filepath.Join(s.Dir, "results.json"), s.Meta, s.Plan, results); err != nil {
		return Report{}, err
	}
	var b bytes.Buffer
	if err := rep.Markdown(&b); err != nil {
		return Report{}, err
	}
	if err := writeAtomic(filepath.Join(s.Dir, "report.md"), b.Bytes()); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// checkConfig records cfg in path, or refuses a different one recorded
// before.
func checkConfig(path string, cfg any) error {
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return writeAtomic(path, b)
	case err != nil:
		return err
	case !bytes.Equal(canonical(old), canonical(b)):
		return otherConfigError{dir: filepath.Dir(path), old: oneLine(old), new: oneLine(b)}
	}
	return nil
}

// ErrOtherConfig matches the error of a folder that holds cells of another
// configuration than the run's.
var ErrOtherConfig = errors.New("study: a folder of another configuration")

type otherConfigError struct{ dir, old, new string }

func (e otherConfigError) Error() string {
	return fmt.Sprintf("%s holds cells of another configuration (%s) than this run's (%s): use another folder, or remove it to start over", e.dir, e.old, e.new)
}

func (e otherConfigError) Is(target error) bool { return target == ErrOtherConfig }

// recordCommit records the commit of the first run in path and returns
// it with this run's.
func recordCommit(path string) (old, now string, err error) {
	now = Commit()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return now, now, writeAtomic(path, []byte(now+"\n"))
	}
	if err != nil {
		return "", now, err
	}
	return strings.TrimSpace(string(b)), now, nil
}

// canonical is JSON b with its objects' keys sorted: the same
// configuration whatever wrote it.
func canonical(b []byte) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	c, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return c
}

func oneLine(b []byte) string {
	s := string(compact(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Report is a study's report.md.
type Report struct {
	Title string
	// Paragraphs say what ran: applications, seeds, traces, budgets, the
	// convergence rule.
	Paragraphs []string
	Tables     []Table
	Figures    []Figure
	Headlines  []Headline
	// Wins are the agent arms held against the rule-based autoscaler
	// (the win rule).
	Wins []Win
}

// Figure is a plot file beside the report.
type Figure struct {
	File, Caption string
}

// Markdown writes the report.
func (r Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", r.Title)
	for _, p := range r.Paragraphs {
		b.WriteString(p + "\n\n")
	}
	if len(r.Headlines) > 0 {
		b.WriteString("## Against the paper\n\n")
		if err := HeadlineTable(r.Headlines).Markdown(&b); err != nil {
			return err
		}
	}
	if len(r.Wins) > 0 {
		b.WriteString("## Against the tuned rule-based autoscaler\n\n")
		if err := WinTable(r.Wins).Markdown(&b); err != nil {
			return err
		}
	}
	if len(r.Tables) > 0 {
		b.WriteString("## Results\n\n")
	}
	for _, t := range r.Tables {
		if err := t.Markdown(&b); err != nil {
			return err
		}
	}
	if len(r.Figures) > 0 {
		b.WriteString("## Figures\n\n")
	}
	for _, f := range r.Figures {
		fmt.Fprintf(&b, "![%s](%s)\n\n*%s*\n\n", f.Caption, f.File, f.Caption)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Entry is one study in the report index.
type Entry struct {
	Name, Dir string
	Report    Report
	Elapsed   time.Duration
}

// WriteIndex writes the index of studies run together (out/index.md):
// a link to each report and every headline beside the paper's.
func WriteIndex(path string, title string, entries []Entry, notes ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	for _, n := range notes {
		b.WriteString(n + "\n\n")
	}
	var hs []Headline
	var ws []Win
	for _, e := range entries {
		rel, err := filepath.Rel(filepath.Dir(path), filepath.Join(e.Dir, "report.md"))
		if err != nil {
			rel = filepath.Join(e.Dir, "report.md")
		}
		fmt.Fprintf(&b, "- [%s](%s): %s (%s)\n", e.Name, filepath.ToSlash(rel), e.Report.Title, e.Elapsed.Round(time.Second))
		hs = append(hs, e.Report.Headlines...)
		ws = append(ws, e.Report.Wins...)
	}
	b.WriteString("\n## Headline ratios against the paper\n\n")
	if err := HeadlineTable(hs).Markdown(&b); err != nil {
		return err
	}
	if len(ws) > 0 {
		b.WriteString("## Agents against the tuned rule-based autoscaler (the win rule)\n\n")
		if err := WinTable(ws).Markdown(&b); err != nil {
			return err
		}
	}
	return writeAtomic(path, []byte(b.String()))
}

// MergeDirs puts the shards' folders of one study together in dst: their
// configurations must be the same (dst takes it, or must already hold
// it), and their cells are merged (Merge). It returns an error naming the
// folder that differs.
func MergeDirs(dst string, srcs ...string) error {
	if len(srcs) == 0 {
		return errors.New("study: merge: no shard folders given")
	}
	var cfg []byte
	for _, src := range srcs {
		b, err := os.ReadFile(filepath.Join(src, "config.json"))
		if err != nil {
			return fmt.Errorf("study: merge: %s is not a study's folder: %w", src, err)
		}
		if cfg != nil && !bytes.Equal(canonical(cfg), canonical(b)) {
			return fmt.Errorf("study: merge: %s ran another configuration than %s", src, srcs[0])
		}
		cfg = b
	}
	store, err := OpenStore(dst)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(cfg, &v); err != nil {
		return fmt.Errorf("study: merge: %s: %w", filepath.Join(srcs[0], "config.json"), err)
	}
	if err := checkConfig(filepath.Join(dst, "config.json"), v); err != nil {
		return fmt.Errorf("study: merge: %w", err)
	}
	_, err = Merge(store, srcs...)
	return err
}
