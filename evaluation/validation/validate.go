package validation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/services"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Config is `aware sim validate`: which applications, at which CPU limits
// and loads, run how, and what the simulator is given.
type Config struct {
	// Apps are application spec files (--app); without them the first N
	// (--n) of the pool of PoolSeed (--pool-seed).
	Apps     []string
	N        int
	PoolSeed int64
	// CPUs are the CPU limits (--cpus) and Utilisations the planned CPU
	// utilisation at each (--utilisations).
	CPUs, Utilisations []float64
	// Window is each replayed trace window (--window), after Warmup of
	// constant load (--warmup); MaxRate caps a window's mean rate
	// (--max-rate).
	Window, Warmup time.Duration
	MaxRate        float64
	// Traces is the folder of the real traces (--traces; a synthetic day
	// when absent).
	Traces string
	// Services is the object store and database mode (--services: local,
	// env or none; none skips the applications that need them).
	Services string
	// Seed seeds windows and arrivals (--seed).
	Seed uint64
	// Out, when set, receives validation.md, validation.json and the
	// profile simulated with (--out).
	Out string
	// SimulateOnly prints the simulated side only (--simulate-only).
	SimulateOnly bool
	// Profile is the calibration profile to simulate with (--profile; the
	// committed one when empty).
	Profile string
	// Recalibrate re-measures the validated chains' segments here first
	// (--recalibrate; the CLI leaves it off in --simulate-only mode unless
	// given), and Overheads also the HTTP overheads (--overheads).
	Recalibrate, Overheads bool
	// Pin runs the server on CPUs of its own (--pin).
	Pin bool
	// Repeats real runs per case, compared by their median (--repeats).
	Repeats int
	// ServiceCores are the simulated services' cores (--service-cores; 0
	// unlimited, negative: what the placement leaves them).
	ServiceCores float64
	// Replay re-simulates an earlier --out folder's cases (--replay).
	Replay string
	// OverheadCPU and OverheadTime, when positive, override the HTTP
	// overheads simulated with (--overhead-cpu, --overhead-time).
	OverheadCPU, OverheadTime time.Duration
}

// Validate reports the first bad field, naming its flag.
func (c Config) Validate() error {
	if c.Repeats < 1 {
		return fmt.Errorf("--repeats %d: must be at least 1", c.Repeats)
	}
	if c.Replay == "" && len(c.Apps) == 0 && c.N < 1 {
		return fmt.Errorf("--n %d: must be positive", c.N)
	}
	return nil
}

// overridden is ov with the OverheadCPU and OverheadTime overrides.
func (c Config) overridden(ov sim.Overheads) sim.Overheads {
	if c.OverheadCPU > 0 {
		ov.CPU = c.OverheadCPU.Seconds()
	}
	if c.OverheadTime > 0 {
		ov.Time = c.OverheadTime.Seconds()
	}
	return ov
}

// Run validates the simulator as cfg says (Replay: re-simulates recorded
// cases), prints the table to out and progress to progress, and with
// cfg.Out writes validation.md, validation.json and profile.json there.
func Run(ctx context.Context, cfg Config, out, progress io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Replay != "" {
		return replay(ctx, cfg, out)
	}
	prof, err := calibration.Default()
	if err != nil {
		return err
	}
	picks, err := cfg.picks(prof)
	if err != nil {
		return err
	}
	if cfg.Profile != "" {
		if prof, err = calibration.Load(cfg.Profile); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
	}
	sources, err := LoadSources(cfg.Traces)
	if err != nil {
		return fmt.Errorf("--traces: %w", err)
	}
	if len(sources) == 0 {
		fmt.Fprintf(out, "no real traces in %s: replaying a synthetic day instead\n", cfg.Traces)
		src, err := SyntheticSource(cfg.Seed)
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

	childEnv := []string(nil)
	recal := cfg.Recalibrate
	maxCPU := 0.0
	for _, c := range cfg.CPUs {
		maxCPU = max(maxCPU, c)
	}
	var place *Placement
	ov := sim.DefaultOverheads()
	if (!cfg.SimulateOnly || recal) && cfg.Pin {
		place = Place(maxCPU, fmt.Sprintf("aware-validate-%d", os.Getpid()))
		defer func() {
			if err := place.Release(); err != nil {
				fmt.Fprintf(progress, "release the CPU placement: %v\n", err)
			}
		}()
		fmt.Fprintf(progress, "placement: %s\n", place.Desc)
	}
	if !cfg.SimulateOnly || recal {
		needs := false
		for _, p := range picks {
			o, d := (app.Spec{Segments: p.Chain}).Needs()
			needs = needs || o || d
		}
		if needs && cfg.Services != services.None {
			var env segments.Env
			stop, ce, err := services.Start(ctx, cfg.Services, dir, &env)
			if err != nil {
				return err
			}
			defer stop()
			childEnv = ce
		}
		if cfg.Services == services.None {
			kept := picks[:0]
			for _, p := range picks {
				if o, d := (app.Spec{Segments: p.Chain}).Needs(); !o && !d {
					kept = append(kept, p)
				}
			}
			picks = kept
		}
		if recal {
			if prof, err = cfg.recalibrate(ctx, progress, prof, picks, childEnv); err != nil {
				return err
			}
		}
		if recal && cfg.Overheads && !cfg.SimulateOnly {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o, m, err := MeasureOverheads(ctx, RealConfig{Exe: exe, Env: childEnv, Dir: dir, Warmup: cfg.Warmup, Seed: cfg.Seed, Placement: place}, prof, 100, 10*time.Second, 3)
			if err != nil {
				return err
			}
			ov = o
			fmt.Fprintf(progress, "HTTP overheads measured here: %.0f µs CPU and %.0f µs off-CPU per request (median latency %.3f ms of matMul 25 at %.0f req/s; defaults %.0f and %.0f µs)\n",
				1e6*ov.CPU, 1e6*ov.Time, 1e3*m.P50, m.Throughput, 1e6*sim.DefaultOverheads().CPU, 1e6*sim.DefaultOverheads().Time)
		}
	}
	ov = cfg.overridden(ov)
	svcCores := cfg.ServiceCores
	if svcCores < 0 {
		// What the services get in a real run: the CPUs besides the
		// server's when pinned, else all but the server's largest limit.
		svcCores = math.Max(float64(runtime.NumCPU())-maxCPU, 1)
		if n := place.RestCPUs(); n > 0 {
			svcCores = float64(n)
		}
	}
	if svcCores > 0 {
		fmt.Fprintf(progress, "simulated services: %.2f CPU cores, shared with the load generator at %.0f µs per request\n", svcCores, 1e6*LoadGenCPU)
	}
	cases, err := Cases(prof, picks, sources, Plan{CPUs: cfg.CPUs, Utilisations: cfg.Utilisations, Window: cfg.Window, MaxRate: cfg.MaxRate, Seed: cfg.Seed})
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var rows []Row
	for i, c := range cases {
		fmt.Fprintf(progress, "[%d/%d] %s at %.2f cores\n", i+1, len(cases), c.App, c.CPU)
		row := Row{Case: c, Method: Method{Quota: "-", MemorySource: "-"}}
		if row.Sim, err = Simulate(ctx, prof, c, append(ServiceOptions(svcCores), sim.WithOverheads(ov))...); err != nil {
			return err
		}
		for rep := 0; !cfg.SimulateOnly && rep < cfg.Repeats; rep++ {
			if cfg.Repeats > 1 {
				fmt.Fprintf(progress, "  repeat %d/%d\n", rep+1, cfg.Repeats)
			}
			m, method, err := Real(ctx, RealConfig{Exe: exe, Env: childEnv, Dir: dir, Warmup: cfg.Warmup, Seed: cfg.Seed, Placement: place}, c)
			if err != nil {
				return err
			}
			row.Method = method
			row.Repeats = append(row.Repeats, m)
		}
		if len(row.Repeats) > 0 {
			row.Real = MedianOf(row.Repeats)
		}
		if len(row.Repeats) < 2 {
			row.Repeats = nil
		}
		rows = append(rows, row)
	}
	return cfg.write(out, prof, rows, svcCores, ov)
}

// record is validation.json: the rows, their summary and the cores the
// simulated services had (0: unlimited), so that Replay re-simulates what
// was compared.
type record struct {
	Rows         []Row    `json:"rows"`
	Summary      Measured `json:"summary"`
	ServiceCores float64  `json:"serviceCores"`
	// Overheads are the HTTP costs simulated with (nil in files written
	// before they were recorded: the defaults).
	Overheads *sim.Overheads `json:"overheads,omitempty"`
}

// write prints the table and, with cfg.Out, writes validation.md,
// validation.json and the profile simulated with.
func (c Config) write(out io.Writer, prof *calibration.Profile, rows []Row, svcCores float64, ov sim.Overheads) error {
	var md strings.Builder
	if c.SimulateOnly {
		fmt.Fprintln(&md, "| app | CPU limit | trace | sim CPU (cores) | sim throughput | sim p95 (ms) | concurrency | sim memory (MiB) |")
		fmt.Fprintln(&md, "|---|---|---|---|---|---|---|---|")
		for _, r := range rows {
			fmt.Fprintf(&md, "| %s | %.2f | %s | %.3f | %.1f | %.2f | %d | %.1f |\n", r.Case.App, r.Case.CPU, r.Case.Trace,
				r.Sim.CPU, r.Sim.Throughput, 1e3*r.Sim.P95, r.Case.Concurrency, r.Sim.Memory/(1<<20))
		}
	} else if err := WriteMarkdown(&md, rows); err != nil {
		return err
	}
	fmt.Fprint(out, md.String())
	if c.Out == "" {
		return nil
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Out, "validation.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	// The profile simulated with, re-measured segments included, so that
	// Profile with SimulateOnly reproduces the simulated side.
	if err := prof.Save(filepath.Join(c.Out, "profile.json")); err != nil {
		return err
	}
	js, err := json.MarshalIndent(record{rows, Summary(rows), svcCores, &ov}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Out, "validation.json"), js, 0o644)
}

// picks are the applications to validate: the given spec files, or the
// first N generated ones.
func (c Config) picks(prof *calibration.Profile) ([]Pick, error) {
	var picks []Pick
	for _, f := range c.Apps {
		s, err := app.Load(f)
		if err != nil {
			return nil, fmt.Errorf("--app: %w", err)
		}
		picks = append(picks, Pick{Name: s.Name, Chain: s.Segments})
	}
	if len(picks) > 0 {
		return picks, nil
	}
	apps, err := generator.FirstApps(prof, c.PoolSeed, c.N)
	if err != nil {
		return nil, err
	}
	for _, a := range apps {
		picks = append(picks, Pick{Name: a.Name(), Chain: a.Spec.Segments, Concurrency: a.Concurrency})
	}
	return picks, nil
}

// recalibrate re-measures every segment of the picks' chains on this
// machine, each in a fresh child process (calibration.ChildMeasurer: this
// binary's `aware workload calibrate one`), and returns a copy of prof
// with those entries replaced.
func (c Config) recalibrate(ctx context.Context, progress io.Writer, prof *calibration.Profile, picks []Pick, childEnv []string) (*calibration.Profile, error) {
	var targets []calibration.Target
	for _, p := range picks {
		for _, s := range p.Chain {
			t := calibration.Target{Segment: s.Name, Size: s.Size}
			if !slices.Contains(targets, t) {
				targets = append(targets, t)
			}
		}
	}
	opts := calibration.DefaultOptions()
	measure, err := calibration.ChildMeasurer(childEnv, 1, opts)
	if err != nil {
		return nil, err
	}
	here, err := calibration.Run(ctx, targets, opts, measure, calibration.ProgressLine(progress))
	fmt.Fprintln(progress)
	if err != nil {
		return nil, fmt.Errorf("re-measure the validated segments: %w", err)
	}
	local := *prof
	local.Entries = slices.Clone(prof.Entries)
	for _, e := range here.Entries {
		i := slices.IndexFunc(local.Entries, func(o calibration.Entry) bool { return o.Segment == e.Segment && o.Size == e.Size })
		if i < 0 {
			local.Entries = append(local.Entries, e)
			continue
		}
		fmt.Fprintf(progress, "%s %d here: %.3g ms of CPU per request (profile %.3g)\n", e.Segment, e.Size, 1e3*e.CPUSeconds, 1e3*local.Entries[i].CPUSeconds)
		local.Entries[i] = e
	}
	local.Sort()
	return &local, nil
}

// replay re-simulates the cases recorded in cfg.Replay with the current
// simulator and compares them with the real figures recorded there.
func replay(ctx context.Context, cfg Config, out io.Writer) error {
	b, err := os.ReadFile(filepath.Join(cfg.Replay, "validation.json"))
	if err != nil {
		return fmt.Errorf("--replay: %w", err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("--replay: %s: %w", filepath.Join(cfg.Replay, "validation.json"), err)
	}
	if len(rec.Rows) == 0 {
		return fmt.Errorf("--replay: %s holds no rows", filepath.Join(cfg.Replay, "validation.json"))
	}
	path := filepath.Join(cfg.Replay, "profile.json")
	if cfg.Profile != "" {
		path = cfg.Profile
	}
	prof, err := calibration.Load(path)
	if err != nil {
		return fmt.Errorf("--replay: %w", err)
	}
	svcCores := cfg.ServiceCores
	if svcCores < 0 {
		svcCores = rec.ServiceCores
	}
	ov := sim.DefaultOverheads()
	if rec.Overheads != nil {
		ov = *rec.Overheads
	}
	ov = cfg.overridden(ov)
	for i := range rec.Rows {
		if rec.Rows[i].Sim, err = Simulate(ctx, prof, rec.Rows[i].Case, append(ServiceOptions(svcCores), sim.WithOverheads(ov))...); err != nil {
			return err
		}
	}
	cfg.SimulateOnly = false
	return cfg.write(out, prof, rec.Rows, svcCores, ov)
}
