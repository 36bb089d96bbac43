package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/metalearn"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
)

func newMetaEvalCmd() *cobra.Command {
	c := metalearn.EvalConfig{Lab: lab.DefaultConfig(), Apps: 50, Episodes: 20, M: 20, Shift: 12 * time.Hour, Windows: metalearn.WindowsRandom}
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure what a meta-trained embedding tells apart on held-out applications",
		Long: `Loads a run of aware meta train (--from) and, on the first --apps applications of the
pool's test split (never trained on), measures:

  identification: each application runs --episodes greedy episodes of the trained agent, the
  reference bundle, and as many again, the query bundle; a query is identified when its most
  similar reference (FLASH similarity) is its own application's. With --windows random (the
  default) every episode starts at a point of the day drawn from its seed (reference and
  query seeds differ), as meta-training draws them; with --windows shift the reference
  episodes all replay the application's first window and the query's a window --shift later.
  The same with the meta learner at its untrained initial weights is printed beside it.

  similarity against reward drop: for every ordered pair (i, j) the agent runs application j
  with application i's embedding instead of its own; the reward it loses is held against the
  similarity of the two embeddings (Spearman's rank correlation, 95 % bootstrap interval
  over pairs; pairs share applications, so the interval is narrower than an independent
  sample's).

Writes eval.md and eval.json beside the checkpoint.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Lab.ShapeSeed = c.Seed
			c.Bar = bars(cmd.ErrOrStderr())
			_, err := metalearn.Eval(cmd.Context(), c, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.From, "from", "out/meta", "folder of an aware meta train run")
	f.IntVar(&c.Apps, "apps", c.Apps, "test-split applications to evaluate on")
	f.IntVar(&c.Episodes, "episodes", c.Episodes, "episodes per bundle (the paper's M = 20)")
	f.IntVar(&c.M, "m", c.M, "trajectories per bundle the run was trained with")
	f.Uint64Var(&c.Seed, "seed", 1, "seed of the episodes (and of the untrained meta learner)")
	f.DurationVar(&c.Shift, "shift", c.Shift, "with --windows shift: how much later in the trace the query window starts")
	f.StringVar(&c.Windows, "windows", c.Windows, "where in the day the bundles' episodes run: random (each from its seed) or shift (two fixed windows)")
	poolFlags(f, &c.Lab)
	return cmd
}
