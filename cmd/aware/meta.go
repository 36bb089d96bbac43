package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/evaluation/metalearn"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
)

func newMetaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "meta",
		Short: "Train the meta learner (AWARE's workload embedding) with an agent across the pool",
	}
	cmd.AddCommand(newMetaTrainCmd(), newMetaEvalCmd())
	return cmd
}

// quickMeta is `aware meta train --quick`: a run that finishes within
// minutes on 2 cores.
var quickMeta = metalearn.TrainConfig{Apps: 40, Rounds: 6}

func newMetaTrainCmd() *cobra.Command {
	c := metalearn.TrainConfig{Lab: lab.DefaultConfig(), Apps: 800, Rounds: 20, M: 20, ContrastEvery: 8, Contrast: meta.DefaultContrast(), HeldOutEpisodes: 4}
	var quick bool
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train DDPG and the meta learner jointly on the pool's train-split applications",
		Long: `Trains a DDPG agent and the meta learner together (paper §3, dissertation FLASH): in each
round every application of the pool's train split runs one episode of 100 steps on the
calibrated simulator; before the episode the meta learner embeds the application's best
recent trajectories (a bundle of the top --m by episode reward from a buffer of 32) and the
agent acts on the AWARE state followed by that embedding. Each episode starts at a point of
the application's trace drawn from its seed (--fixed-start: always at the application's
offset), so that neither the agent nor the embedding learns one window of the day by heart.

The meta learner trains for identification: after every --contrast-every episodes,
--contrast-tasks applications each give two disjoint bundles of up to --contrast-views of
their buffered trajectories (from different windows of the day), and a symmetric InfoNCE
loss over the FLASH similarity (temperature --contrast-temperature) draws each bundle
towards its own application's other bundle and away from the others'. The paper's joint
training, the agent's critic loss back-propagated through the embedding into the meta
learner after every update (one backward pass per episode), is --meta-lr 3e-4 (the
dissertation's rate); it is off by default because it made the embedding identify held-out
applications worse, not better (docs/agents.md). --contrast-every 0 with --meta-lr 3e-4 is
the paper's training alone.

After each round the meta learner (with every application's trajectory buffer) and the
agent are checkpointed in --out; run the same command again to resume after the last
finished round. Each round's figures are appended to --out/rounds.jsonl. The adaptation
study starts from a run with aware study adaptation --meta DIR.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quick && !cmd.Flags().Changed("apps") {
				c.Apps = quickMeta.Apps
			}
			if quick && !cmd.Flags().Changed("rounds") {
				c.Rounds = quickMeta.Rounds
			}
			c.Lab.ShapeSeed = c.Seed
			if !c.Verbose {
				c.Bar = bars(cmd.ErrOrStderr())
			}
			return metalearn.Train(cmd.Context(), c, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&c.Apps, "apps", c.Apps, "train-split applications to train on, the first of the pool (800: all of a 1000-app pool's)")
	f.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds of one episode per application")
	f.IntVar(&c.M, "m", c.M, "trajectories per bundle (the paper's 20)")
	poolFlags(f, &c.Lab)
	f.Uint64Var(&c.Seed, "seed", 1, "seed of the agent, the meta learner and the episodes")
	f.StringVar(&c.Dir, "out", "out/meta", "checkpoint and report folder")
	f.BoolVar(&quick, "quick", false, fmt.Sprintf("a short run: %d applications, %d rounds (unless given)", quickMeta.Apps, quickMeta.Rounds))
	f.BoolVar(&c.Verbose, "verbose", false, "print every round instead of a progress bar")
	f.Float64Var(&c.Lab.Noise, "noise", lab.DefaultNoise, "standard deviation of the agent's Gaussian exploration noise (FIRM's is 0.2)")
	actionsFlag(f, &c.Lab.Mapping)
	f.BoolVar(&c.FixedStart, "fixed-start", false, "start every episode at the application's trace offset instead of a point drawn from its seed")
	f.IntVar(&c.ContrastEvery, "contrast-every", c.ContrastEvery, "episodes between steps of the identification objective (0: off, the paper's training)")
	f.IntVar(&c.Contrast.Tasks, "contrast-tasks", c.Contrast.Tasks, "applications per step of the identification objective")
	f.IntVar(&c.Contrast.Views, "contrast-views", c.Contrast.Views, "trajectories per bundle of the identification objective")
	f.Float64Var(&c.Contrast.Temperature, "contrast-temperature", c.Contrast.Temperature, "temperature of the identification objective's InfoNCE loss")
	f.Float64Var(&c.Contrast.LR, "contrast-lr", c.Contrast.LR, "learning rate of the identification objective")
	f.Float64Var(&c.MetaLR, "meta-lr", 0, "learning rate of the agent's critic loss back-propagated into the meta learner, the paper's joint training (the dissertation's 3e-4; 0: off, the embedding learns from the identification objective alone)")
	f.IntVar(&c.HeldOut, "validate", 0, "train-split applications after the --apps trained on, held out: after every round the meta learner identifies them (nearest neighbour, as aware meta eval) and rounds.jsonl records it beside an untrained meta learner's (0: off)")
	f.IntVar(&c.HeldOutEpisodes, "validate-episodes", c.HeldOutEpisodes, "with --validate: greedy episodes per bundle")
	return cmd
}
