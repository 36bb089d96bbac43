package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/mirror"
	"github.com/aware-autoscaler/aware/evaluation/study/suite"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/workloads/objstore"
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
	testbed     suite.Testbed
	speedup     float64
	shardEnv    string
	shards      int
	results     string
}

// connectObjects opens a bucket of the S3-compatible store whose endpoint
// and keys are in AWARE_S3_*.
func connectObjects(ctx context.Context, bucket string) (mirror.Store, error) {
	cfg := objstore.ConfigFromEnv()
	if cfg.Endpoint == "" {
		return nil, fmt.Errorf("$%s is not set: give the object store's endpoint and keys in %s, %s and %s", objstore.EnvEndpoint, objstore.EnvEndpoint, objstore.EnvAccessKey, objstore.EnvSecretKey)
	}
	cfg.Bucket = bucket
	return objstore.Connect(ctx, cfg)
}

// shardSpec is the shard of --shard, or of --shard-index-env and --shards
// (index k of the variable runs shard k+1 of n, as --shard (k+1)/n).
func (fl *studyFlags) shardSpec(f *pflag.FlagSet) (study.ShardSpec, error) {
	byEnv := fl.shardEnv != "" || f.Changed("shards")
	switch {
	case byEnv && fl.shard != "":
		return study.ShardSpec{}, fmt.Errorf("--shard and --shard-index-env/--shards: choose one")
	case fl.shard != "":
		s, err := study.ParseShard(fl.shard)
		if err != nil {
			return study.ShardSpec{}, fmt.Errorf("--shard: %w", err)
		}
		return s, nil
	case !byEnv:
		return study.All, nil
	case fl.shardEnv == "" || fl.shards < 1:
		return study.ShardSpec{}, fmt.Errorf("--shard-index-env %q and --shards %d: give both, a variable name and a positive count", fl.shardEnv, fl.shards)
	}
	v, ok := os.LookupEnv(fl.shardEnv)
	if !ok || v == "" {
		return study.ShardSpec{}, fmt.Errorf("--shard-index-env: $%s is not set (in an Indexed Job the Job controller sets JOB_COMPLETION_INDEX)", fl.shardEnv)
	}
	k, err := strconv.Atoi(v)
	if err != nil || k < 0 || k >= fl.shards {
		return study.ShardSpec{}, fmt.Errorf("--shard-index-env: $%s = %q: want a 0-based index below --shards %d", fl.shardEnv, v, fl.shards)
	}
	return study.ParseShard(fmt.Sprintf("%d/%d", k+1, fl.shards))
}

// onTestbed sets the testbed variant from --testbed, --testbed-up and
// --speedup.
func (fl *studyFlags) onTestbed(f *pflag.FlagSet) error {
	if fl.testbed.Dir == "" && !fl.testbed.Up {
		if f.Changed("speedup") {
			return fmt.Errorf("--speedup: only with --testbed or --testbed-up")
		}
		return nil
	}
	if fl.shard != "" || fl.shardEnv != "" || f.Changed("shards") {
		return fmt.Errorf("--testbed/--testbed-up and a shard: the testbed cells run all at once on one testbed; run them unsharded")
	}
	clock := testbedrun.DefaultClock()
	clock.Speedup = fl.speedup
	if err := clock.Validate(); err != nil {
		return fmt.Errorf("--speedup: %w", err)
	}
	fl.variant.Testbed = &clock
	fl.testbed.Traces = fl.lab.Traces
	if fl.testbed.Up {
		bin, err := driverBinary()
		if err != nil {
			return fmt.Errorf("--testbed-up: %w", err)
		}
		fl.testbed.Driver = bin
	}
	return nil
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
	f.StringVar(&fl.testbed.Dir, "testbed", "", "bootstrapping, serving: run their cells on the running local testbed of this --dir as well (aware testbed up --step 3s --time-scale 10), all at once, beside the same cells on the simulator, and compare them")
	f.BoolVar(&fl.testbed.Up, "testbed-up", false, "as --testbed, on a local testbed brought up for the run (in --testbed DIR if given, which must not exist) and torn down after it")
	f.Float64Var(&fl.speedup, "speedup", testbedrun.MaxSpeedup, "with --testbed: simulated seconds per wall second (the testbed's --time-scale); at most the measured limit")
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
		Short: "Run the studies on the simulator: the paper's characterisation, adaptation, serving, bootstrapping, and alpha",
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
  alpha             the reward's weight α and DDPG under a Lagrangian SLO constraint against the
                    tuned HPA+VPA at equal violations (not in the paper: the win rule's study)

--quick (the default) runs each in a few minutes on 2 cores; --full at the paper's scale
(expected wall time printed first). --shard i/n runs every n-th cell from the i-th, so that
n machines share a study; put their folders together with aware study merge.

Policies several cells start from (converged policies, TL's sources, the meta-training run)
are trained once and kept in <out>/policies/<hash of the pool and simulation>.

--arms adds optional arms to the bootstrapping study (ablations of the route, with T_online,
each arm's first acting episode, the offline critics and the fitted simulators' errors in
its report); --meta lets the adaptation study's AWARE start from an aware meta train run.`,
		Example: `  aware study --quick                       # all five, as make run does
  aware study adaptation --full --shard 2/4 --out shard2
  aware study merge adaptation --full --out out shard1/adaptation shard2/adaptation shard3/adaptation shard4/adaptation
  aware study bootstrapping serving --quick --testbed-up --out out/testbed   # on a local testbed too, beside the simulator
  aware study serving --trace my-load.csv --out out/mine
  aware study bootstrapping --full --arms all --out out/ablations
  aware study adaptation --meta out/meta --out out/from-meta`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := fl.mode()
			if err != nil {
				return err
			}
			shard, err := fl.shardSpec(cmd.Flags())
			if err != nil {
				return err
			}
			if fl.workers < 1 {
				return fmt.Errorf("--workers %d: must be positive", fl.workers)
			}
			if len(args) == 0 || (len(args) == 1 && args[0] == "all") {
				args = names
			}
			if err := fl.onTestbed(cmd.Flags()); err != nil {
				return err
			}
			if fl.results != "" {
				if _, err := mirror.ParseURL(fl.results); err != nil {
					return fmt.Errorf("--results: %w", err)
				}
			}
			entries, err := suite.Run(cmd.Context(), args, suite.Options{Out: fl.out, Mode: mode, Lab: fl.lab, Shard: shard, Workers: fl.workers,
				Progress: cmd.ErrOrStderr(), Log: cmd.OutOrStdout(), Command: strings.Join(os.Args, " "), DryRun: fl.dryRun, Variant: fl.variant,
				Testbed: fl.testbed, Results: suite.Results{URL: fl.results, Connect: connectObjects}})
			if err != nil && !errors.Is(err, lab.ErrIncomplete) {
				return err
			}
			// Studies whose testbed cells missed rounds have their reports
			// written: their headlines too, then the error.
			return errors.Join(printHeadlines(cmd, entries), err)
		},
	}
	f := cmd.Flags()
	fl.register(f)
	f.StringVar(&fl.shard, "shard", "", "run only shard i of n of every study's cells (e.g. 2/4); merge the shards' --out folders with aware study merge")
	f.StringVar(&fl.shardEnv, "shard-index-env", "", "with --shards N: run the shard whose 0-based index is in this environment variable (JOB_COMPLETION_INDEX in a Kubernetes Indexed Job: docs/testbed.md)")
	f.IntVar(&fl.shards, "shards", 0, "with --shard-index-env: how many shards there are")
	f.StringVar(&fl.results, "results", "", "keep --out in an S3-compatible store as well, at s3://BUCKET/PREFIX/shard-I-of-N (endpoint and keys in AWARE_S3_ENDPOINT, AWARE_S3_ACCESS_KEY, AWARE_S3_SECRET_KEY): pulled first, so a retried shard resumes (files already in --out are kept as the newer), pushed every 30s, at once when told to stop and at the end; aware study merge STUDY s3://BUCKET/PREFIX puts the shards together")
	f.IntVar(&fl.workers, "workers", fl.workers, "cells run at once")
	f.BoolVar(&fl.dryRun, "dry-run", false, "print each study's expected wall time and stop")
	cmd.AddCommand(newStudyMergeCmd())
	return cmd
}

// printHeadlines ends a run with its headline ratios beside the paper's
// and its agents against the rule-based autoscaler.
func printHeadlines(cmd *cobra.Command, entries []study.Entry) error {
	var hs []study.Headline
	var ws []study.Win
	for _, e := range entries {
		hs = append(hs, e.Report.Headlines...)
		ws = append(ws, e.Report.Wins...)
	}
	out := cmd.OutOrStdout()
	if len(hs) > 0 {
		fmt.Fprintln(out)
		if err := study.HeadlineTable(hs).Markdown(out); err != nil {
			return err
		}
	}
	if len(ws) > 0 {
		return study.WinTable(ws).Markdown(out)
	}
	return nil
}

func newStudyMergeCmd() *cobra.Command {
	fl := studyFlags{lab: lab.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "merge STUDY SHARD-DIR|s3://BUCKET/PREFIX...",
		Short: "Put the shards of a study together and write its report",
		Long: `Copies the cells of the shards' study folders (each the <out>/<study> folder of an
aware study --shard i/n run of the same configuration) into <out>/<study>, refusing folders
of another configuration and a cell that two shards computed differently, then writes the
report as an unsharded run would. Give the same --quick/--full, pool, --arms and --meta flags
as the shards.

An argument s3://BUCKET/PREFIX is the --results folder of sharded runs (an Indexed Job's:
docs/testbed.md): every shard-I-of-N/<study> below it is fetched (the endpoint and keys in
AWARE_S3_ENDPOINT, AWARE_S3_ACCESS_KEY, AWARE_S3_SECRET_KEY), and a missing shard is named.`,
		Example: `  aware study merge adaptation --full --out out shard1/adaptation shard2/adaptation
  AWARE_S3_ENDPOINT=127.0.0.1:9000 AWARE_S3_ACCESS_KEY=… AWARE_S3_SECRET_KEY=… \
    aware study merge serving --full --out out s3://aware/studies/aware-study`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := fl.mode()
			if err != nil {
				return err
			}
			for _, name := range []string{"testbed", "testbed-up", "speedup"} {
				if cmd.Flags().Changed(name) {
					return fmt.Errorf("--%s: the testbed cells run unsharded, so there is nothing of theirs to merge", name)
				}
			}
			rep, err := suite.Merge(cmd.Context(), args[0], args[1:], suite.Options{Out: fl.out, Mode: mode, Lab: fl.lab, Log: cmd.OutOrStdout(), Variant: fl.variant,
				Results: suite.Results{Connect: connectObjects}})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: shards of %s merged; report %s/%s/report.md\n", args[0], strings.Join(args[1:], " "), fl.out, args[0])
			return printHeadlines(cmd, []study.Entry{{Name: args[0], Report: rep}})
		},
	}
	fl.register(cmd.Flags())
	return cmd
}
