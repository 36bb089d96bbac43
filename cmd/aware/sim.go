package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/evaluation/validation"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "The calibrated cluster simulator",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSimValidateCmd())
	return cmd
}

type validateFlags struct {
	apps         []string
	n            int
	poolSeed     int64
	cpus, utils  []float64
	window       time.Duration
	warmup       time.Duration
	maxRate      float64
	traces       string
	services     string
	seed         uint64
	out          string
	simulateOnly bool
}

func newSimValidateCmd() *cobra.Command {
	var fl validateFlags
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Run generated applications for real and on the simulator, and compare CPU, throughput, p95 latency and memory",
		Long: `Runs each application as a workload server child process limited to each CPU limit
(GOMAXPROCS = ceil(limit) and a cgroup CPU quota where the machine allows) with the generated
app's request concurrency (--concurrency; unbounded for --app files), replays a window of a
real trace (../shared/traces; a synthetic day without it) with the load generator on
loopback, simulates the same application, allocation, concurrency and per-second load, and
prints the table and the median absolute percentage errors against the targets (CPU ≤ 15 %,
throughput ≤ 5 %, p95 latency ≤ 30 %, memory ≤ 20 %). Real memory is the server process's
resident set (VmRSS) averaged over the window; simulated memory the pod's working set.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimValidate(cmd, fl) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&fl.apps, "app", nil, "application spec files to validate (default: the first --n of the generated pool)")
	f.IntVar(&fl.n, "n", 8, "how many generated applications to validate")
	f.Int64Var(&fl.poolSeed, "pool-seed", 1, "seed of the generated pool")
	f.Float64SliceVar(&fl.cpus, "cpus", []float64{0.5, 1}, "CPU limits (cores) to run each application at")
	f.Float64SliceVar(&fl.utils, "utilisations", []float64{0.6, 0.4}, "planned CPU utilisation for each CPU limit")
	f.DurationVar(&fl.window, "window", 30*time.Second, "length of each replayed trace window")
	f.DurationVar(&fl.warmup, "warmup", 3*time.Second, "constant load before each measured window")
	f.Float64Var(&fl.maxRate, "max-rate", 1500, "cap on a window's mean rate, req/s")
	f.StringVar(&fl.traces, "traces", "../shared/traces", "folder of the real traces (synthetic load when absent)")
	f.StringVar(&fl.services, "services", "local", "object store and database: local (start them), env (AWARE_S3_*, AWARE_DATABASE_URL) or none (skip applications that need them)")
	f.Uint64Var(&fl.seed, "seed", 1, "seed for windows and arrivals")
	f.StringVar(&fl.out, "out", "", "also write validation.md and validation.json into this folder")
	f.BoolVar(&fl.simulateOnly, "simulate-only", false, "print the simulated side only (no servers)")
	return cmd
}

func runSimValidate(cmd *cobra.Command, fl validateFlags) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	picks, err := validationPicks(fl, prof)
	if err != nil {
		return err
	}
	sources, err := validation.LoadSources(fl.traces)
	if err != nil {
		return fmt.Errorf("--traces: %w", err)
	}
	if len(sources) == 0 {
		fmt.Fprintf(out, "no real traces in %s: replaying a synthetic day instead\n", fl.traces)
		src, err := validation.SyntheticSource(fl.seed)
		if err != nil {
			return err
		}
		sources = append(sources, src)
	}
	dir, err := os.MkdirTemp("", "aware-validate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var env segments.Env
	childEnv := []string(nil)
	if !fl.simulateOnly {
		needs := false
		for _, p := range picks {
			o, d := (app.Spec{Segments: p.Chain}).Needs()
			needs = needs || o || d
		}
		if needs && fl.services != "none" {
			stop, ce, err := startServices(ctx, fl.services, dir, &env)
			if err != nil {
				return err
			}
			defer stop()
			childEnv = ce
		}
		if fl.services == "none" {
			kept := picks[:0]
			for _, p := range picks {
				if o, d := (app.Spec{Segments: p.Chain}).Needs(); !o && !d {
					kept = append(kept, p)
				}
			}
			picks = kept
		}
	}
	cases, err := validation.Cases(prof, picks, sources, validation.Plan{CPUs: fl.cpus, Utilisations: fl.utils, Window: fl.window, MaxRate: fl.maxRate, Seed: fl.seed})
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var rows []validation.Row
	for i, c := range cases {
		fmt.Fprintf(cmd.ErrOrStderr(), "[%d/%d] %s at %.2f cores\n", i+1, len(cases), c.App, c.CPU)
		row := validation.Row{Case: c, Method: validation.Method{Quota: "-", MemorySource: "-"}}
		if row.Sim, err = validation.Simulate(ctx, prof, c); err != nil {
			return err
		}
		if !fl.simulateOnly {
			if row.Real, row.Method, err = validation.Real(ctx, validation.RealConfig{Exe: exe, Env: childEnv, Dir: dir, Warmup: fl.warmup, Seed: fl.seed}, c); err != nil {
				return err
			}
		}
		rows = append(rows, row)
	}
	var md strings.Builder
	if fl.simulateOnly {
		fmt.Fprintln(&md, "| app | CPU limit | trace | sim CPU (cores) | sim throughput | sim p95 (ms) | concurrency | sim memory (MiB) |")
		fmt.Fprintln(&md, "|---|---|---|---|---|---|---|---|")
		for _, r := range rows {
			fmt.Fprintf(&md, "| %s | %.2f | %s | %.3f | %.1f | %.2f | %d | %.1f |\n", r.Case.App, r.Case.CPU, r.Case.Trace,
				r.Sim.CPU, r.Sim.Throughput, 1e3*r.Sim.P95, r.Case.Concurrency, r.Sim.Memory/(1<<20))
		}
	} else if err := validation.WriteMarkdown(&md, rows); err != nil {
		return err
	}
	fmt.Fprint(out, md.String())
	if fl.out != "" {
		if err := os.MkdirAll(fl.out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(fl.out, "validation.md"), []byte(md.String()), 0o644); err != nil {
			return err
		}
		js, err := json.MarshalIndent(struct {
			Rows    []validation.Row    `json:"rows"`
			Summary validation.Measured `json:"summary"`
		}{rows, validation.Summary(rows)}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(fl.out, "validation.json"), js, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// validationPicks are the applications to validate: the given spec files,
// or the first n generated ones.
func validationPicks(fl validateFlags, prof *calibration.Profile) ([]validation.Pick, error) {
	var picks []validation.Pick
	for _, f := range fl.apps {
		s, err := app.Load(f)
		if err != nil {
			return nil, fmt.Errorf("--app: %w", err)
		}
		picks = append(picks, validation.Pick{Name: s.Name, Chain: s.Segments})
	}
	if len(picks) > 0 {
		return picks, nil
	}
	if fl.n < 1 {
		return nil, fmt.Errorf("--n %d: must be positive", fl.n)
	}
	opts := generator.DefaultOptions()
	opts.Apps, opts.Seed = fl.n, fl.poolSeed
	apps, err := generator.Generate(opts, prof)
	if err != nil {
		return nil, err
	}
	for _, a := range apps {
		picks = append(picks, validation.Pick{Name: a.Name(), Chain: a.Spec.Segments, Concurrency: a.Concurrency})
	}
	return picks, nil
}
