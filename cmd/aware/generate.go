package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

// generateFlags are the flags of `aware generate`.
type generateFlags struct {
	opts      generator.Options
	out       string
	profile   string
	manifests bool
	text      bool
	mo        generator.ManifestOptions
	mode      string
	traces    string
	step      time.Duration
	tune      tuneFlags
}

// newGenerateCmd is `aware generate`: the application pool.
func newGenerateCmd() *cobra.Command {
	fl := generateFlags{opts: generator.DefaultOptions(), mo: generator.DefaultManifestOptions()}
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
			return runGenerate(cmd, fl)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.opts.Apps, "apps", fl.opts.Apps, "number of applications")
	f.Int64Var(&fl.opts.Seed, "seed", fl.opts.Seed, "seed of the whole pool")
	f.IntVar(&fl.opts.MaxSegments, "max-segments", fl.opts.MaxSegments, "longest segment chain")
	f.Float64Var(&fl.opts.TrainFraction, "train-fraction", fl.opts.TrainFraction, "share of the apps in the train split")
	f.StringVar(&fl.out, "out", "", "output directory (required)")
	f.StringVar(&fl.profile, "profile", "", "calibration profile JSON (default: the embedded workloads/calibration/profile.json)")
	f.BoolVar(&fl.manifests, "manifests", false, "also write Kubernetes manifests to OUT/manifests")
	f.BoolVar(&fl.text, "text", false, "print the summary as plain text instead of Markdown")
	f.StringVar(&fl.mo.Image, "image", fl.mo.Image, "workload server image of the manifests")
	f.StringVar(&fl.mo.Namespace, "namespace", "", "namespace of the manifests' objects (default: none, kubectl's context)")
	f.StringVar(&fl.mo.Recommender, "recommender", fl.mo.Recommender, `MPA recommender of the manifests ("default" for HPA + VPA)`)
	f.StringVar(&fl.traces, "traces", "../shared/traces", "folder of the real traces for the target search (synthetic shapes when absent)")
	f.DurationVar(&fl.step, "step", 30*time.Second, "simulation step of the target search")
	fl.tune.register(f)
	f.StringVar(&fl.mode, "update-mode", string(fl.mo.UpdateMode), "MPA update mode of the manifests: Off, Initial, Recreate or InPlaceOrRecreate")
	return cmd
}

func runGenerate(cmd *cobra.Command, fl generateFlags) error {
	var errs []error
	if fl.out == "" {
		errs = append(errs, errors.New("--out: an output directory is required"))
	}
	if fl.opts.Apps <= 0 {
		errs = append(errs, fmt.Errorf("--apps: %d must be positive", fl.opts.Apps))
	}
	if fl.opts.MaxSegments <= 0 {
		errs = append(errs, fmt.Errorf("--max-segments: %d must be positive", fl.opts.MaxSegments))
	}
	if !(fl.opts.TrainFraction >= 0 && fl.opts.TrainFraction <= 1) {
		errs = append(errs, fmt.Errorf("--train-fraction: %g is not in [0, 1]", fl.opts.TrainFraction))
	}
	switch m := v1alpha1.UpdateMode(fl.mode); m {
	case v1alpha1.UpdateModeOff, v1alpha1.UpdateModeInitial, v1alpha1.UpdateModeRecreate, v1alpha1.UpdateModeInPlaceOrRecreate:
		fl.mo.UpdateMode = m
	default:
		errs = append(errs, fmt.Errorf("--update-mode: %q is not Off, Initial, Recreate or InPlaceOrRecreate", fl.mode))
	}
	tc, err := fl.tune.config(fl.step, uint64(fl.opts.Seed))
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	prof, err := calibration.Default()
	if fl.profile != "" {
		prof, err = calibration.Load(fl.profile)
	}
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	apps, err := generator.Generate(fl.opts, prof)
	if err != nil {
		return err
	}
	if !fl.tune.off {
		shapes, err := generator.LoadShapes(fl.traces, fl.step, uint64(fl.opts.Seed))
		if err != nil {
			return err
		}
		simApps, err := generator.SimApps(apps, shapes)
		if err != nil {
			return err
		}
		if err := baselines.TunePool(cmd.Context(), prof, apps, simApps, tc); err != nil {
			return err
		}
	}
	if err := writePool(fl.out, apps, prof); err != nil {
		return err
	}
	if fl.manifests {
		if err := generator.WriteManifests(fl.out, apps, fl.mo); err != nil {
			return err
		}
	}
	s := generator.Summarize(apps, prof)
	w := cmd.OutOrStdout()
	if fl.text {
		return s.WriteText(w)
	}
	return s.WriteMarkdown(w)
}
