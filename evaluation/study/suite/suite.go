// Package suite runs the scripted studies by name, quick or full, whole
// or as one shard, puts shards back together, and writes the index of the
// studies run together (out/index.md) with every headline ratio beside
// the paper's. A Variant changes the registered configurations with
// options that only some studies take (the bootstrapping study's optional
// arms, the adaptation study's meta-training folder). `aware study` and
// `make run` are thin shells over it.
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
	"github.com/aware-autoscaler/aware/evaluation/study/alpha"
	"github.com/aware-autoscaler/aware/evaluation/study/bootstrapping"
	"github.com/aware-autoscaler/aware/evaluation/study/characterisation"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/serving"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
)

// Modes.
const (
	Quick = "quick"
	Full  = "full"
)

// Study is one registered study.
type Study struct {
	Name, Summary string
	// Cost is the single-core time the study takes in mode with the
	// variant (at lab.Pace).
	Cost func(l *lab.Lab, mode string, v Variant) (time.Duration, error)
	// Run runs the study in mode with the variant.
	Run func(ctx context.Context, mode string, v Variant, r lab.Run) (study.Report, error)
	// Takes are the Variant options the study takes (ArmsOption,
	// MetaOption); it runs as registered whatever the others are.
	Takes []string
	// Wall, for a study that runs on a testbed, is the wall time its
	// testbed cells take in mode with the variant (0 otherwise).
	Wall func(mode string, v Variant) time.Duration
	// Part, for a study that runs on a testbed, is its share of the
	// testbed run in mode with the variant: the studies run together
	// put their cells on the testbed at once (Run).
	Part func(ctx context.Context, mode string, v Variant, r lab.Run) (lab.TestbedPart, error)
}

// Variant is what a run changes in the registered configurations: options
// that only some studies take. The zero Variant runs every study as
// registered (Quick or Full).
type Variant struct {
	// Arms are optional arms beside a study's own, and SimEpisodes their
	// budget in a fitted simulator (the bootstrapping study's ablations:
	// bootstrapping.Config.WithArms). ArmsOption.
	Arms        []string
	SimEpisodes int
	// MetaFrom is the folder of an `aware meta train` run that AWARE
	// starts from instead of the study's own meta-training run (the
	// adaptation study: adaptation.Config.From). MetaOption.
	MetaFrom string
	// Testbed runs the studies' cells on a testbed as well, sized for it
	// and on its Clock (bootstrapping.OnTestbed). TestbedOption.
	Testbed *testbedrun.Clock
}

// The Variant options, as Study.Takes names them.
const (
	ArmsOption = "optional arms"
	MetaOption = "a meta-training folder"
	// TestbedOption: the study runs on a testbed.
	TestbedOption = "a testbed"
)

// options are the options v sets.
func (v Variant) options() []string {
	var out []string
	if len(v.Arms) > 0 || v.SimEpisodes != 0 {
		out = append(out, ArmsOption)
	}
	if v.MetaFrom != "" {
		out = append(out, MetaOption)
	}
	if v.Testbed != nil {
		out = append(out, TestbedOption)
	}
	return out
}

// Vary is how a study takes a Variant option: Apply changes its
// configuration by v.
type Vary[C any] struct {
	Takes string
	Apply func(c C, v Variant) (C, error)
	// Part, with TestbedOption, is the study's share of a testbed run
	// (Study.Part).
	Part func(context.Context, lab.Run, C) (lab.TestbedPart, error)
}

// config is what a study's configuration offers the registry.
type config interface {
	Estimate(l *lab.Lab) (time.Duration, error)
}

// onTestbed is a configuration that may run cells on a testbed: the wall
// time they take there (0 when it does not).
type onTestbed interface {
	TestbedWall() time.Duration
}

// Of registers a study by its configurations, its Execute and the Variant
// options it takes.
func Of[C config](name, summary string, quick, full func() C, execute func(context.Context, lab.Run, C) (study.Report, error), vary ...Vary[C]) Study {
	pick := func(mode string, v Variant) (C, error) {
		c := quick()
		if mode == Full {
			c = full()
		}
		set := v.options()
		for _, o := range vary {
			if !slices.Contains(set, o.Takes) {
				continue
			}
			var err error
			if c, err = o.Apply(c, v); err != nil {
				return c, err
			}
		}
		return c, nil
	}
	s := Study{Name: name, Summary: summary,
		Cost: func(l *lab.Lab, mode string, v Variant) (time.Duration, error) {
			c, err := pick(mode, v)
			if err != nil {
				return 0, err
			}
			return c.Estimate(l)
		},
		Run: func(ctx context.Context, mode string, v Variant, r lab.Run) (study.Report, error) {
			c, err := pick(mode, v)
			if err != nil {
				return study.Report{}, err
			}
			return execute(ctx, r, c)
		}}
	s.Wall = func(mode string, v Variant) time.Duration {
		c, err := pick(mode, v)
		if t, ok := any(c).(onTestbed); ok && err == nil {
			return t.TestbedWall()
		}
		return 0
	}
	for _, o := range vary {
		s.Takes = append(s.Takes, o.Takes)
		if part := o.Part; part != nil {
			s.Part = func(ctx context.Context, mode string, v Variant, r lab.Run) (lab.TestbedPart, error) {
				c, err := pick(mode, v)
				if err != nil {
					return lab.TestbedPart{}, err
				}
				return part(ctx, r, c)
			}
		}
	}
	return s
}

// checkVariant refuses a variant option that none of studies takes.
func checkVariant(studies []Study, v Variant) error {
	takes := func(o string) func(Study) bool { return func(s Study) bool { return slices.Contains(s.Takes, o) } }
	for _, o := range v.options() {
		if slices.ContainsFunc(studies, takes(o)) {
			continue
		}
		var names, takers []string
		for _, s := range studies {
			names = append(names, s.Name)
		}
		for _, s := range registry {
			if takes(o)(s) {
				takers = append(takers, s.Name)
			}
		}
		return fmt.Errorf("%s: taken by %s, none of the studies named (%s)", o, strings.Join(takers, ", "), strings.Join(names, ", "))
	}
	return nil
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
		adaptation.Quick, adaptation.Full, adaptation.Execute,
		Vary[adaptation.Config]{Takes: MetaOption, Apply: func(c adaptation.Config, v Variant) (adaptation.Config, error) {
			c.From = v.MetaFrom
			return c, nil
		}}))
	Register(Of(serving.Name, "converged agents under the instability scenarios: AWARE's retraining vs none vs rule-based vs converged (paper §5.3)",
		serving.Quick, serving.Full, serving.Execute,
		Vary[serving.Config]{Takes: TestbedOption, Apply: func(c serving.Config, v Variant) (serving.Config, error) {
			t := serving.OnTestbed(c.Apps > serving.Quick().Apps)
			t.Testbed.Clock = *v.Testbed
			return t, t.Validate()
		}, Part: serving.TestbedPart}))
	Register(Of(bootstrapping.Name, "the first episodes of a new application: AWARE with bootstrapping vs without vs rule-based vs converged (paper §5.4)",
		bootstrapping.Quick, bootstrapping.Full, bootstrapping.Execute,
		Vary[bootstrapping.Config]{Takes: ArmsOption, Apply: func(c bootstrapping.Config, v Variant) (bootstrapping.Config, error) {
			return c.WithArms(v.Arms, v.SimEpisodes)
		}},
		Vary[bootstrapping.Config]{Takes: TestbedOption, Apply: func(c bootstrapping.Config, v Variant) (bootstrapping.Config, error) {
			if len(c.Extra) > 0 {
				return c, fmt.Errorf("bootstrapping: the optional arms %v do not run on the testbed: run them without --testbed", c.Extra)
			}
			t := bootstrapping.OnTestbed(c.Apps > bootstrapping.Quick().Apps)
			t.Testbed.Clock = *v.Testbed
			return t, t.Validate()
		}, Part: bootstrapping.TestbedPart}))
	Register(Of(alpha.Name, "what the reward's weight α buys, and DDPG under a Lagrangian SLO constraint, against the tuned HPA+VPA at equal violations (the win rule; not in the paper)",
		alpha.Quick, alpha.Full, alpha.Execute))
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
	// Variant changes the registered configurations.
	Variant Variant
	// Testbed is the running testbed the studies run on with
	// Variant.Testbed (Attach, or Up for the run and Down after).
	Testbed Testbed
	// Results, with a URL, keeps Out in an object store (Run); Merge
	// takes shard arguments that are URLs with its Connect.
	Results Results
}

// Testbed says which testbed the studies run on: the local testbed in Dir
// (`aware testbed up --dir DIR`), or, with Up, one brought up in Dir (a
// new temporary folder when empty) with the driver binary for the run and
// torn down after it, leaving nothing.
type Testbed struct {
	Dir    string
	Up     bool
	Driver string
	// Traces is the twin's traces folder of a testbed brought up.
	Traces string
}

// bed attaches to the testbed of o, bringing it up first with Up; down
// tears down what bed brought up.
func (o Options) bed(ctx context.Context) (b *testbedrun.Bed, down func() error, err error) {
	none := func() error { return nil }
	if o.Variant.Testbed == nil {
		return nil, none, nil
	}
	t := o.Testbed
	if !t.Up {
		if t.Dir == "" {
			return nil, none, errors.New("a study on a testbed needs --testbed DIR or --testbed-up")
		}
		b, err := testbedrun.Attach(ctx, t.Dir)
		return b, none, err
	}
	dir := t.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "aware-study-testbed-"); err != nil {
			return nil, none, fmt.Errorf("--testbed-up: %w", err)
		}
	} else if _, err := os.Stat(dir); err == nil {
		return nil, none, fmt.Errorf("--testbed-up: %s exists; it would be removed after the run: name a new folder, or use --testbed %s for a running testbed", dir, dir)
	}
	log := o.Log
	fmt.Fprintf(log, "bringing up a local testbed in %s for the run (%s); it is torn down after\n", dir, *o.Variant.Testbed)
	down = func() error {
		fmt.Fprintf(log, "tearing down the testbed in %s\n", dir)
		return testbedrun.Down(context.WithoutCancel(ctx), t.Driver, dir, io.Discard)
	}
	if err := testbedrun.Up(ctx, t.Driver, dir, *o.Variant.Testbed, t.Traces, o.Progress); err != nil {
		return nil, none, errors.Join(err, down())
	}
	if b, err = testbedrun.Attach(ctx, dir); err != nil {
		return nil, none, errors.Join(err, down())
	}
	return b, down, nil
}

// Run runs the named studies in order and, when they ran whole, writes
// Out/index.md linking their reports and listing every headline.
func Run(ctx context.Context, names []string, o Options) (entries []study.Entry, err error) {
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
	if err := checkVariant(studies, o.Variant); err != nil {
		return nil, err
	}
	l, err := lab.New(o.Lab)
	if err != nil {
		return nil, err
	}
	if o.Results.URL != "" && !o.DryRun {
		// Pulled before anything reads Out: the policies, the estimate of
		// what is left, the studies' cells.
		stop, serr := o.startResults(ctx)
		if serr != nil {
			return nil, serr
		}
		defer func() { err = errors.Join(o.Results.hint(err), stop()) }()
	}
	pol, err := lab.OpenPolicies(filepath.Join(o.Out, "policies"), l)
	if err != nil {
		return nil, err
	}
	var total time.Duration
	costs := make([]time.Duration, len(studies))
	for i, s := range studies {
		if costs[i], err = s.Cost(l, o.Mode, o.Variant); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		total += costs[i]
	}
	workers := max(o.Workers, 1)
	fmt.Fprintf(o.Log, "%s studies %s on %d worker(s), shard %s: expected wall time %s (%s of one core at the measured pace; less what earlier runs left in %s)\n",
		o.Mode, strings.Join(names, ", "), workers, o.Shard, expected(total, workers, o.Shard), total.Round(time.Second), o.Out)
	if wall := testbedWall(studies, o); wall > 0 {
		fmt.Fprintf(o.Log, "plus the testbed cells: %s of wall time (the longest study's episodes on the testbed's clock, the studies' cells at once), and bringing the testbed up and down\n", wall.Round(time.Second))
	}
	if o.DryRun {
		for i, s := range studies {
			fmt.Fprintf(o.Log, "%s: %s; expected %s\n", s.Name, s.Summary, expected(costs[i], workers, o.Shard))
		}
		return nil, nil
	}
	var bed *testbedrun.Bed
	run := func(s Study) lab.Run {
		return lab.Run{Lab: l, Policies: pol, Dir: filepath.Join(o.Out, s.Name), Shard: o.Shard, Workers: workers, Progress: o.Progress,
			Bootstrap: study.DefaultBootstrap(), Meta: meta(o, l), Testbed: bed}
	}
	need, err := needTestbed(ctx, studies, o, run)
	if err != nil {
		return nil, err
	}
	if need {
		var down func() error
		if bed, down, err = o.bed(ctx); err != nil {
			return nil, err
		}
		defer func() {
			if derr := down(); derr != nil {
				fmt.Fprintf(o.Log, "tearing down the testbed: %v\n", derr)
			}
		}()
	} else if o.Variant.Testbed != nil {
		fmt.Fprintf(o.Log, "testbed: every study's testbed cells are kept in %s; no testbed is needed\n", o.Out)
	}
	if err := runTestbed(ctx, studies, o, run); err != nil {
		return nil, err
	}
	// incomplete are the studies whose testbed cells missed rounds: their
	// reports are written and the others still run (their testbed cells
	// ran in the same batch); the run's error says so at the end.
	var incomplete error
	for i, s := range studies {
		began := time.Now()
		dir := filepath.Join(o.Out, s.Name)
		fmt.Fprintf(o.Log, "%s: %s; expected %s → %s\n", s.Name, s.Summary, expected(costs[i], workers, o.Shard), dir)
		rep, err := s.Run(ctx, o.Mode, o.Variant, run(s))
		if errors.Is(err, study.ErrShard) {
			fmt.Fprintf(o.Log, "%s: shard %s saved in %s (%s); run `aware study merge %s --out DIR SHARD-DIRS…` once every shard is done\n", s.Name, o.Shard, dir, time.Since(began).Round(time.Second), s.Name)
			continue
		}
		if errors.Is(err, lab.ErrIncomplete) {
			incomplete = errors.Join(incomplete, err)
		} else if err != nil {
			return entries, errors.Join(fmt.Errorf("%s: %w", s.Name, err), incomplete)
		}
		e := study.Entry{Name: s.Name, Dir: dir, Report: rep, Elapsed: time.Since(began)}
		fmt.Fprintf(o.Log, "%s: report %s (%s)\n", s.Name, filepath.Join(dir, "report.md"), e.Elapsed.Round(time.Second))
		entries = append(entries, e)
	}
	if o.Shard != study.All || len(entries) == 0 {
		return entries, incomplete
	}
	if err := WriteIndex(o.Out, o.Mode, entries); err != nil {
		return entries, errors.Join(err, incomplete)
	}
	return entries, incomplete
}

// testbedWall is the wall time of the studies' testbed cells run at once:
// the longest study's.
func testbedWall(studies []Study, o Options) time.Duration {
	var wall time.Duration
	for _, s := range studies {
		if s.Wall != nil {
			wall = max(wall, s.Wall(o.Mode, o.Variant))
		}
	}
	return wall
}

// needTestbed is whether a study of the run has testbed cells that its
// folder does not keep yet (without a testbed variant, none has).
func needTestbed(ctx context.Context, studies []Study, o Options, run func(Study) lab.Run) (bool, error) {
	if o.Variant.Testbed == nil {
		return false, nil
	}
	need := false
	for _, s := range studies {
		if s.Part == nil {
			continue
		}
		// Planned without a testbed: a part not kept says it needs one
		// before making its cells; every study is asked, so that a kept
		// record of another configuration is refused before a testbed
		// comes up.
		_, err := s.Part(ctx, o.Mode, o.Variant, run(s))
		if errors.Is(err, lab.ErrNoTestbed) {
			need = true
			continue
		}
		if err != nil {
			return false, err
		}
	}
	return need, nil
}

// runTestbed runs the testbed cells of the studies that run on one, all at
// once: one batch of MPAs on the testbed, so that the studies' testbed
// halves take the longest one's wall time, not their sum. Each study then
// finds its cells' results in its folder.
func runTestbed(ctx context.Context, studies []Study, o Options, run func(Study) lab.Run) error {
	if o.Variant.Testbed == nil {
		return nil
	}
	var parts []lab.TestbedPart
	var names []string
	cells := 0
	for _, s := range studies {
		if s.Part == nil {
			continue
		}
		p, err := s.Part(ctx, o.Mode, o.Variant, run(s))
		if err != nil {
			return err // it names the study
		}
		if !p.Kept() {
			parts = append(parts, p)
			names = append(names, s.Name)
			cells += len(p.Cells)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	began := time.Now()
	fmt.Fprintf(o.Log, "testbed: the cells of %s, %d MPAs at once (%s)\n", strings.Join(names, ", "), cells, parts[0].Clock)
	if err := lab.RunTestbed(ctx, run(Study{}), parts...); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "testbed: done (%s)\n", time.Since(began).Round(time.Second))
	return nil
}

// WriteIndex writes Out/index.md for the entries.
func WriteIndex(out, mode string, entries []study.Entry) error {
	return study.WriteIndex(filepath.Join(out, "index.md"), "AWARE-Go studies ("+mode+")", entries,
		fmt.Sprintf("Commit %s. Each report says what ran (applications, seeds, traces, budgets) and how each figure is computed; results.json beside it holds every per-application, per-seed figure.", study.Commit()),
		"Verdict, in size as well as direction: \"reaches the paper's size\" when our 95 % interval lies on the paper's side of 1 and holds the paper's ratio, \"beyond the paper's size\" when it lies wholly past it, \"same direction, smaller\" when it lies on the paper's side of 1 short of the paper's ratio, \"reversed\" when it lies wholly on the other side of 1, \"inconclusive\" when it holds 1.")
}

// Merge puts the shards of the named study (folders of `--shard` runs, or
// the URL of a run whose Results kept them there: every shard below it)
// together in o.Out/<name> and writes its report.
func Merge(ctx context.Context, name string, shards []string, o Options) (study.Report, error) {
	s, err := Find(name)
	if err != nil {
		return study.Report{}, err
	}
	if err := checkVariant([]Study{s}, o.Variant); err != nil {
		return study.Report{}, err
	}
	dir := filepath.Join(o.Out, name)
	l, err := lab.New(o.Lab)
	if err != nil {
		return study.Report{}, err
	}
	shards, remove, err := fetchShards(ctx, name, shards, o.Results.Connect)
	defer remove()
	if err != nil {
		return study.Report{}, fmt.Errorf("study: merge: %w", err)
	}
	if err := study.MergeDirs(dir, shards...); err != nil {
		return study.Report{}, err
	}
	// Rendering runs no cell: no policies are needed.
	return s.Run(ctx, o.Mode, o.Variant, lab.Run{Lab: l, Dir: dir, Shard: study.All, Bootstrap: study.DefaultBootstrap(), Meta: meta(o, l), RenderOnly: true})
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
