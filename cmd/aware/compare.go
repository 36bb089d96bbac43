package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

type compareFlags struct {
	apps     int
	poolSeed int64
	seed     uint64
	algos    []string
	mapping  gym.Mapping
	episodes map[string]int
	scored   int
	workers  int
	step     time.Duration
	traces   string
	out      string
}

func newCompareCmd() *cobra.Command {
	var fl compareFlags
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Train agents on test-split applications and compare them with HPA+VPA",
		Long: `Trains every algorithm on each of the first --apps test-split applications of the generated
pool (in the simulator, episodes of 100 steps replaying the application's trace window), then
scores each greedy policy and HPA+VPA (warmed up on the same window first) over --scored
episodes with the same seeds. Prints the per-application table and the wins per algorithm,
and writes results.{json,md} and one learning-curve figure per algorithm to --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCompare(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), fl)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.apps, "apps", 10, "number of test-split applications, from the start of the pool")
	f.Int64Var(&fl.poolSeed, "pool-seed", 1, "seed of the generated pool")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the agents and the simulation")
	f.StringSliceVar(&fl.algos, "algos", train.Algos(), "algorithms to train")
	actionsFlag(f, &fl.mapping)
	f.StringToIntVar(&fl.episodes, "episodes", nil, "training episodes per algorithm, e.g. ddpg=1000,ppo=1500 (defaults: ddpg=1000, ppo=1500, ppo-continuous=1500)")
	f.IntVar(&fl.scored, "scored", 5, "scored episodes per policy")
	f.IntVar(&fl.workers, "workers", 2, "applications trained in parallel")
	f.DurationVar(&fl.step, "step", 30*time.Second, "simulation step")
	f.StringVar(&fl.traces, "traces", "../shared/traces", "folder of the real traces (synthetic shapes when absent)")
	f.StringVar(&fl.out, "out", "out/compare", "output folder")
	return cmd
}

func runCompare(ctx context.Context, out, progress io.Writer, fl compareFlags) error {
	if fl.apps < 1 {
		return fmt.Errorf("--apps %d: must be positive", fl.apps)
	}
	for _, a := range fl.algos {
		if _, err := train.FindAlgorithm(a); err != nil {
			return fmt.Errorf("--algos: %w", err)
		}
	}
	for a, n := range fl.episodes {
		if !slices.Contains(fl.algos, a) {
			return fmt.Errorf("--episodes: %q is not among --algos %s", a, strings.Join(fl.algos, ","))
		}
		if n < 1 {
			return fmt.Errorf("--episodes: %s=%d must be positive", a, n)
		}
	}
	if fl.scored < 1 {
		return fmt.Errorf("--scored %d: must be positive", fl.scored)
	}
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	// The test split is spread over the pool; find the first fl.apps of it.
	all, err := generatePool(prof, fl.poolSeed, generator.DefaultOptions().Apps)
	if err != nil {
		return err
	}
	var apps []generator.App
	for _, a := range all {
		if a.Split == generator.SplitTest && len(apps) < fl.apps {
			apps = append(apps, a)
		}
	}
	if len(apps) < fl.apps {
		return fmt.Errorf("--apps %d: the pool has only %d test-split applications", fl.apps, len(apps))
	}
	simApps, shapes, err := simulate(apps, fl.traces, fl.step, fl.seed)
	if err != nil {
		return err
	}
	// The baseline is HPA+VPA with each app's tuned target, as `aware run`.
	if err := tuneApps(ctx, prof, apps, simApps, fl.step, fl.seed); err != nil {
		return err
	}
	cases := make([]train.Case, len(apps))
	origins := map[string]bool{}
	for i, a := range apps {
		cases[i] = train.Case{Name: a.Name(), Chain: segments.FormatChain(a.Spec.Segments), App: simApps[i], CPUTarget: a.Profile.Targets.CPU, MinCPU: a.MinCPU}
		origins[a.Load.Source+": "+shapes.Origin[a.Load.Source]] = true
	}
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.Name
	}
	fmt.Fprintf(progress, "training %s on %d test-split applications (%s)\n", strings.Join(fl.algos, ", "), len(cases), strings.Join(names, " "))
	var (
		mu   sync.Mutex
		done int
	)
	b := newBar(progress, "compare", len(cases)*len(fl.algos))
	res, err := train.Compare(ctx, cases, train.CompareConfig{
		Profile: prof, Step: fl.step, Algos: fl.algos, Mapping: fl.mapping, Episodes: fl.episodes, EvalEpisodes: fl.scored,
		Seed: fl.seed, Workers: fl.workers,
		Progress: func(train.Result) {
			mu.Lock()
			defer mu.Unlock()
			done++
			b.set(done)
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
	cmdline := fmt.Sprintf("aware compare --apps %d --pool-seed %d --seed %d --algos %s --actions %s --scored %d", fl.apps, fl.poolSeed, fl.seed, strings.Join(fl.algos, ","), fl.mapping, fl.scored)
	if len(fl.episodes) > 0 {
		var eps []string
		for _, a := range fl.algos {
			if n, ok := fl.episodes[a]; ok {
				eps = append(eps, fmt.Sprintf("%s=%d", a, n))
			}
		}
		cmdline += " --episodes " + strings.Join(eps, ",")
	}
	rep := train.Report{Command: cmdline, Seed: fl.seed, Baseline: "hpa+vpa", Shapes: strings.Join(src, "; "), Results: res}
	if err := rep.WriteMarkdown(out); err != nil {
		return err
	}
	if err := rep.Save(fl.out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nwrote results.md, results.json and curves-<algo>.png to %s\n", filepath.Clean(fl.out))
	return nil
}
