package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/suite"
)

// studyFlags are the flags of `aware study` and `aware study merge`.
type studyFlags struct {
	quick, full bool
	shard       string
	workers     int
	dryRun      bool
	out         string
	lab         lab.Config
	variant     suite.Variant
}

// poolFlags registers the generated pool and the simulation that the
// studies and the meta commands run on, into c.
func poolFlags(f *pflag.FlagSet, c *lab.Config) {
	f.IntVar(&c.PoolSize, "pool", c.PoolSize, "size of the generated pool the applications are drawn from")
	f.Int64Var(&c.PoolSeed, "pool-seed", c.PoolSeed, "seed of the generated pool")
	tracesFlag(f, &c.Traces)
	f.DurationVar(&c.Step, "step", c.Step, "simulation step")
}

func (fl *studyFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&fl.quick, "quick", false, "the quick studies (the default): minutes each on 2 cores, showing the direction of each effect")
	f.BoolVar(&fl.full, "full", false, "the paper's scale (R = 100 A/B tests × 10 applications, every scenario); prints its expected wall time first")
	f.StringVar(&fl.out, "out", "out", "output root: <out>/<study>/ (report.md, results.json, plots), <out>/policies/, <out>/index.md")
	poolFlags(f, &fl.lab)
	f.StringVar(&fl.lab.Trace, "trace", "", "one trace file in any supported format (workloads/trace) that drives every application instead: rerun a study on your own load")
	f.Float64Var(&fl.lab.Noise, "noise", fl.lab.Noise, "standard deviation of every agent's Gaussian exploration noise")
	actionsFlag(f, &fl.lab.Mapping)
	f.StringSliceVar(&fl.variant.Arms, "arms", nil, "bootstrapping: optional arms beside its own: BCQ-phi<Φ> (e.g. BCQ-phi0.05), offline-DDPG, PPO, PPO-fitted; all for BCQ-phi0.05,offline-DDPG,PPO,PPO-fitted")
	f.IntVar(&fl.variant.SimEpisodes, "sim-episodes", 0, "bootstrapping, with --arms PPO-fitted: episodes PPO trains in the fitted simulator (default 1500)")
	f.StringVar(&fl.variant.MetaFrom, "meta", "", "adaptation: AWARE starts from this aware meta train folder (bundles of 20) instead of meta-training its own")
}

func (fl *studyFlags) mode() (string, error) {
	if fl.quick && fl.full {
		return "", fmt.Errorf("--quick and --full: choose one")
	}
	if fl.full {
		return suite.Full, nil
	}
	return suite.Quick, nil
}

func newStudyCmd() *cobra.Command {
	fl := studyFlags{workers: runtime.GOMAXPROCS(0), lab: lab.DefaultConfig()}
	var names []string
	for _, s := range suite.Studies() {
		names = append(names, s.Name)
	}
	cmd := &cobra.Command{
		Use:   "study [" + strings.Join(names, "|") + "|all]...",
		Short: "Run the paper's studies on the simulator: characterisation, adaptation, serving, bootstrapping",
		Long: `Runs the named studies (all when none is named), each as cells (an arm on an application
with a seed, perhaps under a scenario) run in parallel on --workers goroutines and saved as
they finish in <out>/<study>/cells: an interrupted study resumes where it stopped. Each
study writes report.md (every figure with its 95 % bootstrap interval, the tuned rule-based
HPA+VPA row beside the agents, our ratios beside the paper's), results.json (every
per-application, per-seed figure, the commit, seeds, traces and versions) and PNG plots;
a whole run writes <out>/index.md linking the reports, with every headline ratio.

  characterisation  what a converged policy loses moved to a new application or under each
                    instability scenario, and early training against rule-based (§2.3)
  adaptation        AWARE vs TL vs TL+ adapting to new applications (§5.2)
  serving           converged agents under the scenarios: AWARE's retraining detector vs no
                    retraining vs rule-based vs a converged policy (§5.3)
  bootstrapping     a new application's first episodes with and without bootstrapping (§5.4)

--quick (the default) runs each in a few minutes on 2 cores; --full at the paper's scale
(expected wall time printed first). --shard i/n runs every n-th cell from the i-th, so that
n machines share a study; put their folders together with aware study merge.

Policies several cells start from (converged policies, TL's sources, the meta-training run)
are trained once and kept in <out>/policies/<hash of the pool and simulation>.

--arms adds optional arms to the bootstrapping study (ablations of the route, with T_online,
each arm's first acting episode, the offline critics and the fitted simulators' errors in
its report); --meta lets the adaptation study's AWARE start from an aware meta train run.`,
		Example: `  aware study --quick                       # all four, as make run does
  aware study adaptation --full --shard 2/4 --out shard2
  aware study merge adaptation --full --out out shard1 shard2 shard3 shard4
  aware study serving --trace my-load.csv --out out/mine
  aware study bootstrapping --full --arms all --out out/ablations
  aware study adaptation --meta out/meta --out out/from-meta`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := fl.mode()
			if err != nil {
				return err
			}
			shard := study.All
			if fl.shard != "" {
				if shard, err = study.ParseShard(fl.shard); err != nil {
					return fmt.Errorf("--shard: %w", err)
				}
			}
			if fl.workers < 1 {
				return fmt.Errorf("--workers %d: must be positive", fl.workers)
			}
			if len(args) == 0 || (len(args) == 1 && args[0] == "all") {
				args = names
			}
			entries, err := suite.Run(cmd.Context(), args, suite.Options{Out: fl.out, Mode: mode, Lab: fl.lab, Shard: shard, Workers: fl.workers,
				Progress: cmd.ErrOrStderr(), Log: cmd.OutOrStdout(), Command: strings.Join(os.Args, " "), DryRun: fl.dryRun, Variant: fl.variant})
			if err != nil {
				return err
			}
			return printHeadlines(cmd, entries)
		},
	}
	f := cmd.Flags()
	fl.register(f)
	f.StringVar(&fl.shard, "shard", "", "run only shard i of n of every study's cells (e.g. 2/4); merge the shards' --out folders with aware study merge")
	f.IntVar(&fl.workers, "workers", fl.workers, "cells run at once")
	f.BoolVar(&fl.dryRun, "dry-run", false, "print each study's expected wall time and stop")
	cmd.AddCommand(newStudyMergeCmd())
	return cmd
}

// printHeadlines ends a run with its headline ratios beside the paper's.
func printHeadlines(cmd *cobra.Command, entries []study.Entry) error {
	var hs []study.Headline
	for _, e := range entries {
		hs = append(hs, e.Report.Headlines...)
	}
	if len(hs) == 0 {
		return nil
	}
	fmt.Fprintln(cmd.OutOrStdout())
	return study.HeadlineTable(hs).Markdown(cmd.OutOrStdout())
}

func newStudyMergeCmd() *cobra.Command {
	fl := studyFlags{lab: lab.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "merge STUDY SHARD-DIR...",
		Short: "Put the shards of a study together and write its report",
		Long: `Copies the cells of the shards' study folders (each the <out>/<study> folder of an
aware study --shard i/n run of the same configuration) into <out>/<study>, refusing folders
of another configuration and a cell that two shards computed differently, then writes the
report as an unsharded run would. Give the same --quick/--full, pool, --arms and --meta flags
as the shards.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := fl.mode()
			if err != nil {
				return err
			}
			rep, err := suite.Merge(cmd.Context(), args[0], args[1:], suite.Options{Out: fl.out, Mode: mode, Lab: fl.lab, Log: cmd.OutOrStdout(), Variant: fl.variant})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d shard folders merged; report %s/%s/report.md\n", args[0], len(args)-1, fl.out, args[0])
			return printHeadlines(cmd, []study.Entry{{Name: args[0], Report: rep}})
		},
	}
	fl.register(cmd.Flags())
	return cmd
}
