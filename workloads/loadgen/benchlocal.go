package loadgen

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/server"
)

// LocalBenchConfig is one benchmark of the load generator against a local
// workload server (`aware loadgen bench`). Errors name its flags.
type LocalBenchConfig struct {
	Rates          []int         // target rates, requests per second (--rates)
	Duration       time.Duration // replay time per rate
	Warmup         time.Duration // unreported warm-up at the first rate
	Pause          time.Duration // idle time between rates
	Arrivals       string        // TraceConstant or TracePoisson (--arrivals)
	Seed           uint64        // of Poisson arrivals
	Tolerance      float64       // largest acceptable relative error of the achieved rate
	MustPassUpTo   float64       // fail if a rate up to this one misses the tolerance (0: never)
	MaxOutstanding int           // requests in flight at most
	JSON           bool          // print the results as JSON
	ServerLog      string        // write the server's log here ("": shown only if it fails)
}

// Validate reports the first invalid field, naming its flag.
func (c LocalBenchConfig) Validate() error {
	if c.Arrivals != TraceConstant && c.Arrivals != TracePoisson {
		return fmt.Errorf("--arrivals %q: want %s or %s", c.Arrivals, TraceConstant, TracePoisson)
	}
	for _, r := range c.Rates {
		if r <= 0 {
			return fmt.Errorf("--rates: %d must be positive", r)
		}
	}
	return nil
}

// BenchLocal starts this binary's `workload serve` as a child process on
// loopback with the lightest application available (benchApp), replays flat
// load at each rate (Bench) and writes one row per rate to out. It fails
// when a rate up to cfg.MustPassUpTo misses the tolerance.
func BenchLocal(ctx context.Context, cfg LocalBenchConfig, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rates := make([]float64, len(cfg.Rates))
	for i, r := range cfg.Rates {
		rates[i] = float64(r)
	}
	spec, err := benchApp()
	if err != nil {
		return err
	}
	child, cleanup, err := startBenchServer(ctx, spec, cfg.ServerLog)
	if err != nil {
		return err
	}
	defer cleanup()

	rows, runErr := Bench(ctx, child.URL()+"/invoke", BenchConfig{
		Rates: rates, Duration: cfg.Duration, Warmup: cfg.Warmup, Pause: cfg.Pause,
		Poisson: cfg.Arrivals == TracePoisson, Seed: cfg.Seed,
		Options: []Option{WithMaxOutstanding(cfg.MaxOutstanding)},
		AfterRate: func(row BenchRow) error {
			rep := row.Report
			slog.Info("rate done", "target", row.Rate, "achieved", fmt.Sprintf("%.1f", rep.AchievedRate),
				"error", fmt.Sprintf("%+.2f%%", 100*rep.RateError()), "p99", rep.Latency.P99, "pass", row.Pass(cfg.Tolerance))
			if child.Exited() {
				return fmt.Errorf("workload server exited during the benchmark:\n%s", child.LogTail())
			}
			return nil
		},
	})
	if len(rows) > 0 {
		if cfg.JSON {
			err = WriteBenchJSON(out, rows, cfg.Tolerance)
		} else {
			fmt.Fprintf(out, "app: %s (%s size %d); %s arrivals, %s per rate; server and generator share %d CPUs\n",
				spec.Name, spec.Segments[0].Name, spec.Segments[0].Size, cfg.Arrivals, cfg.Duration, runtime.NumCPU())
			err = WriteBenchTable(out, rows, cfg.Tolerance)
		}
		if err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	var failed []string
	for _, r := range rows {
		if r.Rate <= cfg.MustPassUpTo && !r.Pass(cfg.Tolerance) {
			failed = append(failed, strconv.FormatFloat(r.Rate, 'g', -1, 64))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("achieved rate not within %g%% of the target at %v req/s", 100*cfg.Tolerance, failed)
	}
	return nil
}

// startBenchServer writes spec to a temporary directory and starts this
// binary's `workload serve` on a free loopback port as a child process,
// waiting until it is ready. cleanup stops it and removes the directory.
func startBenchServer(ctx context.Context, spec app.Spec, logPath string) (child *server.Child, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "aware-loadgen-bench-")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find own executable: %w", err)
	}
	child, err = server.StartApp(exe, spec, dir, logPath, nil)
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		if err := child.Stop(20 * time.Second); err != nil {
			slog.Warn("stopping the workload server", "err", err)
		}
	}
	if err := child.WaitReady(ctx, time.Minute); err != nil {
		stop()
		return nil, nil, err
	}
	slog.Info("workload server ready", "app", spec.Name, "segment", spec.Segments[0].Name, "size", spec.Segments[0].Size, "url", child.URL())
	return child, func() { stop(); os.RemoveAll(dir) }, nil
}

// benchApp is the lightest real application: one json2yaml segment of 250
// bytes, or, if that segment is not built in, floatOperations of 10000
// iterations, or a 1 ms sleep.
func benchApp() (app.Spec, error) {
	for _, c := range []segments.Spec{{Name: "json2yaml", Size: 250}, {Name: "floatOperations", Size: 10000}, {Name: "sleep", Size: 1}} {
		if _, ok := segments.Lookup(c.Name); !ok {
			continue
		}
		s := app.Spec{APIVersion: app.SpecVersion, Kind: "App", Name: "loadgen-bench", Seed: 1, Segments: []segments.Spec{c}}
		return s, s.Validate()
	}
	return app.Spec{}, fmt.Errorf("no light segment registered (have %v)", segments.Names())
}
