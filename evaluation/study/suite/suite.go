// Package suite runs the scripted studies by name, quick or full, whole
// or as one shard, puts shards back together, and writes the index of the
// studies run together (out/index.md) with every headline ratio beside
// the paper's. `aware study` and `make run` are thin shells over it.
package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/adaptation"
	"github.com/aware-autoscaler/aware/evaluation/study/bootstrapping"
	"github.com/aware-autoscaler/aware/evaluation/study/characterisation"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/serving"
)

// Modes.
const (
	Quick = "quick"
	Full  = "full"
)

// Study is one registered study.
type Study struct {
	Name, Summary string
	// Cost is the single-core time the study takes in mode (at
	// lab.Pace).
	Cost func(l *lab.Lab, mode string) (time.Duration, error)
	// Run runs the study in mode.
	Run func(ctx context.Context, mode string, r lab.Run) (study.Report, error)
}

// config is what a study's configuration offers the registry.
type config interface {
	Estimate(l *lab.Lab) (time.Duration, error)
}

// Of registers a study by its configurations and Execute.
func Of[C config](name, summary string, quick, full func() C, execute func(context.Context, lab.Run, C) (study.Report, error)) Study {
	pick := func(mode string) C {
		if mode == Full {
			return full()
		}
		return quick()
	}
	return Study{Name: name, Summary: summary,
		Cost: func(l *lab.Lab, mode string) (time.Duration, error) { return pick(mode).Estimate(l) },
		Run: func(ctx context.Context, mode string, r lab.Run) (study.Report, error) {
			return execute(ctx, r, pick(mode))
		}}
}

var registry []Study

// Register adds a study; its name must be new.
func Register(s Study) {
	if slices.ContainsFunc(registry, func(o Study) bool { return o.Name == s.Name }) {
		panic("suite: study " + s.Name + " registered twice")
	}
	registry = append(registry, s)
}

// Studies are the registered studies in run order.
func Studies() []Study { return slices.Clone(registry) }

// Find is the named study.
func Find(name string) (Study, error) {
	for _, s := range registry {
		if s.Name == name {
			return s, nil
		}
	}
	var names []string
	for _, s := range registry {
		names = append(names, s.Name)
	}
	return Study{}, fmt.Errorf("no study %q (known: %s)", name, strings.Join(names, ", "))
}

func init() {
	Register(Of(characterisation.Name, "what a converged policy loses when moved to a new application or hit by a scenario; early training vs rule-based (paper §2.3)",
		characterisation.Quick, characterisation.Full, characterisation.Execute))
	Register(Of(adaptation.Name, "AWARE vs TL vs TL+ adapting to new applications (paper §5.2)",
		adaptation.Quick, adaptation.Full, adaptation.Execute))
	Register(Of(serving.Name, "converged agents under the instability scenarios: AWARE's retraining vs none vs rule-based vs converged (paper §5.3)",
		serving.Quick, serving.Full, serving.Execute))
	Register(Of(bootstrapping.Name, "the first episodes of a new application: AWARE with bootstrapping vs without vs rule-based vs converged (paper §5.4)",
		bootstrapping.Quick, bootstrapping.Full, bootstrapping.Execute))
}

// Options are a run of studies.
type Options struct {
	// Out is the output root: Out/<study>/, Out/policies/, Out/index.md.
	Out  string
	Mode string
	Lab  lab.Config
	// Shard splits every study's cells (study.All: the whole study).
	Shard   study.ShardSpec
	Workers int
	// Progress receives progress lines; Log the summary lines.
	Progress, Log io.Writer
	// Command is recorded in results.json.
	Command string
	// DryRun prints the expected wall times and stops.
	DryRun bool
}

// Run runs the named studies in order and, when they ran whole, writes
// Out/index.md linking their reports and listing every headline.
func Run(ctx context.Context, names []string, o Options) ([]study.Entry, error) {
	if o.Mode != Quick && o.Mode != Full {
		return nil, fmt.Errorf("mode %q: want %s or %s", o.Mode, Quick, Full)
	}
	if o.Shard == (study.ShardSpec{}) {
		o.Shard = study.All
	}
	studies := make([]Study, len(names))
	for i, n := range names {
		s, err := Find(n)
		if err != nil {
			return nil, err
		}
		studies[i] = s
	}
	l, err := lab.New(o.Lab)
	if err != nil {
		return nil, err
	}
	pol, err := lab.OpenPolicies(filepath.Join(o.Out, "policies"), l)
	if err != nil {
		return nil, err
	}
	var total time.Duration
	costs := make([]time.Duration, len(studies))
	for i, s := range studies {
		if costs[i], err = s.Cost(l, o.Mode); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		total += costs[i]
	}
	workers := max(o.Workers, 1)
	fmt.Fprintf(o.Log, "%s studies %s on %d worker(s), shard %s: expected wall time %s (%s of one core at the measured pace; less what earlier runs left in %s)\n",
		o.Mode, strings.Join(names, ", "), workers, o.Shard, expected(total, workers, o.Shard), total.Round(time.Second), o.Out)
	if o.DryRun {
		for i, s := range studies {
			fmt.Fprintf(o.Log, "%s: %s; expected %s\n", s.Name, s.Summary, expected(costs[i], workers, o.Shard))
		}
		return nil, nil
	}
	var entries []study.Entry
	for i, s := range studies {
		began := time.Now()
		dir := filepath.Join(o.Out, s.Name)
		fmt.Fprintf(o.Log, "%s: %s; expected %s → %s\n", s.Name, s.Summary, expected(costs[i], workers, o.Shard), dir)
		rep, err := s.Run(ctx, o.Mode, lab.Run{Lab: l, Policies: pol, Dir: dir, Shard: o.Shard, Workers: workers, Progress: o.Progress,
			Bootstrap: study.DefaultBootstrap(), Meta: meta(o, l)})
		if errors.Is(err, study.ErrShard) {
			fmt.Fprintf(o.Log, "%s: shard %s saved in %s (%s); run `aware study merge %s --out DIR SHARD-DIRS…` once every shard is done\n", s.Name, o.Shard, dir, time.Since(began).Round(time.Second), s.Name)
			continue
		}
		if err != nil {
			return entries, fmt.Errorf("%s: %w", s.Name, err)
		}
		e := study.Entry{Name: s.Name, Dir: dir, Report: rep, Elapsed: time.Since(began)}
		fmt.Fprintf(o.Log, "%s: report %s (%s)\n", s.Name, filepath.Join(dir, "report.md"), e.Elapsed.Round(time.Second))
		entries = append(entries, e)
	}
	if o.Shard != study.All || len(entries) == 0 {
		return entries, nil
	}
	if err := WriteIndex(o.Out, o.Mode, entries); err != nil {
		return entries, err
	}
	return entries, nil
}

// WriteIndex writes Out/index.md for the entries.
func WriteIndex(out, mode string, entries []study.Entry) error {
	return study.WriteIndex(filepath.Join(out, "index.md"), "AWARE-Go studies ("+mode+")", entries,
		fmt.Sprintf("Commit %s. Each report says what ran (applications, seeds, traces, budgets) and how each figure is computed; results.json beside it holds every per-application, per-seed figure.", study.Commit()),
		"Direction: \"same direction\" when our 95 % interval lies wholly on the paper's side of 1, \"reversed\" when wholly on the other, \"inconclusive\" when it holds 1.")
}

// Merge puts the shards of the named study (folders of `--shard` runs)
// together in o.Out/<name> and writes its report.
func Merge(ctx context.Context, name string, shards []string, o Options) (study.Report, error) {
	s, err := Find(name)
	if err != nil {
		return study.Report{}, err
	}
	dir := filepath.Join(o.Out, name)
	if err := study.MergeDirs(dir, shards...); err != nil {
		return study.Report{}, err
	}
	l, err := lab.New(o.Lab)
	if err != nil {
		return study.Report{}, err
	}
	// Rendering runs no cell: no policies are needed.
	return s.Run(ctx, o.Mode, lab.Run{Lab: l, Dir: dir, Shard: study.All, Bootstrap: study.DefaultBootstrap(), Meta: meta(o, l), RenderOnly: true})
}

// expected is the wall time of single-core time d on workers, for one
// shard.
func expected(d time.Duration, workers int, shard study.ShardSpec) time.Duration {
	return (d / time.Duration(max(shard.Of, 1)*workers)).Round(time.Second)
}

func meta(o Options, l *lab.Lab) study.Meta {
	m := study.Meta{Mode: o.Mode, Commit: study.Commit(), Traces: l.Traces(), Command: o.Command, Versions: map[string]string{}}
	if bi, ok := debug.ReadBuildInfo(); ok {
		m.GoVersion = bi.GoVersion
		for _, d := range bi.Deps {
			if strings.HasPrefix(d.Path, "gonum.org/") {
				m.Versions[d.Path] = d.Version
			}
		}
	}
	m.Seeds = []uint64{o.Lab.ShapeSeed}
	if host, err := os.Hostname(); err == nil {
		m.Versions["host"] = host
	}
	return m
}
