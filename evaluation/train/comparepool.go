package train

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/evaluation/progress"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// ComparePoolConfig is `aware compare`: agents trained on the first test-
// split applications of the generated pool and compared with HPA+VPA.
type ComparePoolConfig struct {
	// Apps is the number of test-split applications (--apps), from the
	// start of the pool of PoolSeed (--pool-seed).
	Apps     int
	PoolSeed int64
	// Seed seeds the agents and the simulation (--seed).
	Seed uint64
	// Algos are the algorithms trained (--algos) and Mapping the
	// continuous ones' action mapping (--actions).
	Algos   []string
	Mapping gym.Mapping
	// Episodes are training episodes per algorithm (--episodes;
	// DefaultEpisodes for those it does not name).
	Episodes map[string]int
	// Scored is the scored episodes per policy (--scored).
	Scored int
	// Workers train applications in parallel (--workers).
	Workers int
	// Step is the simulation step (--step) and Traces the folder of the
	// real traces (--traces).
	Step   time.Duration
	Traces string
	// Out receives results.{json,md} and the curves (--out).
	Out string
	// Bar draws progress (none when nil).
	Bar progress.Bar
}

// Validate reports the first bad field, naming its flag.
func (c ComparePoolConfig) Validate() error {
	if c.Apps < 1 {
		return fmt.Errorf("--apps %d: must be positive", c.Apps)
	}
	for _, a := range c.Algos {
		if _, err := FindAlgorithm(a); err != nil {
			return fmt.Errorf("--algos: %w", err)
		}
	}
	for a, n := range c.Episodes {
		if !slices.Contains(c.Algos, a) {
			return fmt.Errorf("--episodes: %q is not among --algos %s", a, strings.Join(c.Algos, ","))
		}
		if n < 1 {
			return fmt.Errorf("--episodes: %s=%d must be positive", a, n)
		}
	}
	if c.Scored < 1 {
		return fmt.Errorf("--scored %d: must be positive", c.Scored)
	}
	return nil
}

// command is the command line that reproduces c.
func (c ComparePoolConfig) command() string {
	cmdline := fmt.Sprintf("aware compare --apps %d --pool-seed %d --seed %d --algos %s --actions %s --scored %d", c.Apps, c.PoolSeed, c.Seed, strings.Join(c.Algos, ","), c.Mapping, c.Scored)
	if len(c.Episodes) > 0 {
		var eps []string
		for _, a := range c.Algos {
			if n, ok := c.Episodes[a]; ok {
				eps = append(eps, fmt.Sprintf("%s=%d", a, n))
			}
		}
		cmdline += " --episodes " + strings.Join(eps, ",")
	}
	return cmdline
}

// ComparePool picks the first cfg.Apps test-split applications of the
// pool, tunes their HPA+VPA baseline as `aware run` does, trains and
// scores every algorithm on each (Compare), prints the report to out and
// writes results.{json,md} and one learning-curve figure per algorithm to
// cfg.Out. Progress goes to progress.
func ComparePool(ctx context.Context, cfg ComparePoolConfig, out, progress io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	// The test split is spread over the pool; find the first cfg.Apps of it.
	all, err := generator.FirstApps(prof, cfg.PoolSeed, generator.DefaultOptions().Apps)
	if err != nil {
		return err
	}
	var apps []generator.App
	for _, a := range all {
		if a.Split == generator.SplitTest && len(apps) < cfg.Apps {
			apps = append(apps, a)
		}
	}
	if len(apps) < cfg.Apps {
		return fmt.Errorf("--apps %d: the pool has only %d test-split applications", cfg.Apps, len(apps))
	}
	simApps, shapes, err := generator.Simulated(apps, cfg.Traces, cfg.Step, cfg.Seed)
	if err != nil {
		return err
	}
	// The baseline is HPA+VPA with each app's tuned target, as `aware run`.
	if err := baselines.TuneDefault(ctx, prof, apps, simApps, cfg.Step, cfg.Seed); err != nil {
		return err
	}
	cases := make([]Case, len(apps))
	origins := map[string]bool{}
	for i, a := range apps {
		cases[i] = Case{Name: a.Name(), Chain: segments.FormatChain(a.Spec.Segments), App: simApps[i], CPUTarget: a.Profile.Targets.CPU, MinCPU: a.MinCPU}
		origins[a.Load.Source+": "+shapes.Origin[a.Load.Source]] = true
	}
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.Name
	}
	fmt.Fprintf(progress, "training %s on %d test-split applications (%s)\n", strings.Join(cfg.Algos, ", "), len(cases), strings.Join(names, " "))
	var (
		mu   sync.Mutex
		done int
	)
	set, _ := cfg.Bar.Start("compare", len(cases)*len(cfg.Algos))
	res, err := Compare(ctx, cases, CompareConfig{
		Profile: prof, Step: cfg.Step, Algos: cfg.Algos, Mapping: cfg.Mapping, Episodes: cfg.Episodes, EvalEpisodes: cfg.Scored,
		Seed: cfg.Seed, Workers: cfg.Workers,
		Progress: func(Result) {
			mu.Lock()
			defer mu.Unlock()
			done++
			set(done)
		},
	})
	fmt.Fprintln(progress)
	if err != nil {
		return err
	}
	var src []string
	for o := range origins {
		src = append(src, o)
	}
	slices.Sort(src)
	rep := Report{Command: cfg.command(), Seed: cfg.Seed, Baseline: "hpa+vpa", Shapes: strings.Join(src, "; "), Results: res}
	if err := rep.WriteMarkdown(out); err != nil {
		return err
	}
	if err := rep.Save(cfg.Out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nwrote results.md, results.json and curves-<algo>.png to %s\n", filepath.Clean(cfg.Out))
	return nil
}
