package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/generator"
)

// newGenerateCmd is `aware generate`: the application pool.
func newGenerateCmd() *cobra.Command {
	cfg := baselines.GenerateConfig{Options: generator.DefaultOptions(), ManifestOptions: generator.DefaultManifestOptions()}
	var mode string
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Generate the pool of synthetic applications (specs, SLOs, loads, environments, manifests)",
		Long: `Generates --apps applications deterministically from --seed: each a chain of 1 to
--max-segments calibrated segments with an SLO, a trace-driven load, a node environment,
an initial allocation, an agent profile and a train/test split. Each app's HPA CPU target
(profile.targets.cpu, used by the MPA's built-in HPA+VPA) is then searched on the simulator:
the highest target at which HPA+VPA meets the SLO over the --tune-window of the app's load
just before its evaluation starts (--no-tune keeps 0.7). Writes OUT/apps/<name>.yaml,
OUT/pool.json, OUT/summary.md and, with --manifests, OUT/manifests/<name>.yaml (ConfigMaps,
Deployment, Service and MultidimPodAutoscaler), then prints the summary of the pool.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.ManifestOptions.UpdateMode = v1alpha1.UpdateMode(mode)
			return baselines.GeneratePool(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Options.Apps, "apps", cfg.Options.Apps, "number of applications")
	f.Int64Var(&cfg.Options.Seed, "seed", cfg.Options.Seed, "seed of the whole pool")
	f.IntVar(&cfg.Options.MaxSegments, "max-segments", cfg.Options.MaxSegments, "longest segment chain")
	f.Float64Var(&cfg.Options.TrainFraction, "train-fraction", cfg.Options.TrainFraction, "share of the apps in the train split")
	f.StringVar(&cfg.Out, "out", "", "output directory (required)")
	f.StringVar(&cfg.Profile, "profile", "", "calibration profile JSON (default: the embedded workloads/calibration/profile.json)")
	f.BoolVar(&cfg.Manifests, "manifests", false, "also write Kubernetes manifests to OUT/manifests")
	f.BoolVar(&cfg.Text, "text", false, "print the summary as plain text instead of Markdown")
	f.StringVar(&cfg.ManifestOptions.Image, "image", cfg.ManifestOptions.Image, "workload server image of the manifests")
	f.StringVar(&cfg.ManifestOptions.Namespace, "namespace", "", "namespace of the manifests' objects (default: none, kubectl's context)")
	f.StringVar(&cfg.ManifestOptions.Recommender, "recommender", cfg.ManifestOptions.Recommender, `MPA recommender of the manifests ("default" for HPA + VPA)`)
	tracesFlag(f, &cfg.Traces)
	f.DurationVar(&cfg.Step, "step", 30*time.Second, "simulation step of the target search")
	tuneFlags(f, &cfg.Tune)
	f.StringVar(&mode, "update-mode", string(cfg.ManifestOptions.UpdateMode), "MPA update mode of the manifests: Off, Initial, Recreate or InPlaceOrRecreate")
	return cmd
}
