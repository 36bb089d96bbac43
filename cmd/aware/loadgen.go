package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/loadgen"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/server"
	"github.com/aware-autoscaler/aware/workloads/trace"
)

// Pseudo trace names accepted by --trace besides a file.
const (
	traceSynthetic = "synthetic" // trace.Generate with trace.Synthetic
	traceConstant  = "constant"  // evenly spaced arrivals
	tracePoisson   = "poisson"   // homogeneous Poisson arrivals
)

// replayFlags are the flags of `aware loadgen`.
type replayFlags struct {
	target         string
	trace          string
	rate           float64
	windowStart    time.Duration
	duration       time.Duration
	speed          float64
	seed           uint64
	metricsAddr    string
	json           bool
	maxOutstanding int
	timeout        time.Duration
}

// newLoadgenCmd is `aware loadgen`: replay a trace against a workload server.
func newLoadgenCmd() *cobra.Command {
	var fl replayFlags
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "Replay a load trace against a workload server, open loop",
		Long: `Replays a load trace against --target, open loop: every request is sent at its
scheduled time whether or not earlier ones have completed, and latency is measured from
that time. The schedule is --duration of the trace from --window-start, scaled to a mean of
--rate requests per second, with Poisson arrivals within each step (seeded by --seed).
--trace is a trace file (per-second counts, Azure Functions or Azure LLM, gzip or not),
"synthetic" (a generated trace with daily cycles, noise and bursts), "constant" or
"poisson" (flat load). Prints a report; --json prints it as JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReplay(cmd, fl) },
	}
	f := cmd.Flags()
	f.StringVar(&fl.target, "target", "http://127.0.0.1:8080/invoke", "URL to send requests to")
	f.StringVar(&fl.trace, "trace", traceSynthetic, `trace file, or "synthetic", "constant", "poisson"`)
	f.Float64Var(&fl.rate, "rate", 100, "target mean rate in requests per second")
	f.DurationVar(&fl.windowStart, "window-start", 0, "offset of the replayed window in the trace")
	f.DurationVar(&fl.duration, "duration", time.Minute, "length of the replayed window, in trace time (0: to the end of a trace file)")
	f.Float64Var(&fl.speed, "speed", 1, "replay speed: 1 is real time, 2 twice as fast")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the arrivals (and of the synthetic trace)")
	f.StringVar(&fl.metricsAddr, "metrics-addr", "", "serve Prometheus metrics of the generator on this address (e.g. 127.0.0.1:9101)")
	f.BoolVar(&fl.json, "json", false, "print the report as JSON")
	f.IntVar(&fl.maxOutstanding, "max-outstanding", loadgen.DefaultMaxOutstanding, "requests in flight at most; arrivals beyond are dropped and counted")
	f.DurationVar(&fl.timeout, "timeout", loadgen.DefaultTimeout, "per-request timeout")
	cmd.AddCommand(newLoadgenBenchCmd())
	return cmd
}

func runReplay(cmd *cobra.Command, fl replayFlags) error {
	ctx := cmd.Context()
	sched, err := buildSchedule(fl.trace, fl.rate, fl.windowStart, fl.duration, fl.seed)
	if err != nil {
		return err
	}
	opts := []loadgen.Option{loadgen.WithSpeed(fl.speed), loadgen.WithMaxOutstanding(fl.maxOutstanding), loadgen.WithTimeout(fl.timeout)}
	if fl.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		m, err := loadgen.NewMetrics(reg)
		if err != nil {
			return err
		}
		stop, err := serveMetrics(fl.metricsAddr, reg)
		if err != nil {
			return err
		}
		defer stop()
		opts = append(opts, loadgen.WithMetrics(m))
	}
	g, err := loadgen.New(fl.target, opts...)
	if err != nil {
		return err
	}
	slog.Info("replaying", "target", fl.target, "trace", fl.trace, "arrivals", len(sched.Arrivals),
		"length", sched.Length, "speed", fl.speed, "rate", fmt.Sprintf("%.1f req/s", sched.Rate()*fl.speed))
	rep, runErr := g.Run(ctx, sched)
	if err := printReport(cmd.OutOrStdout(), rep, fl.json); err != nil {
		return err
	}
	return runErr
}

func printReport(w io.Writer, rep loadgen.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(w)
}

// buildSchedule turns --trace, --rate, --window-start and --duration into
// arrival offsets.
func buildSchedule(name string, rate float64, start, length time.Duration, seed uint64) (loadgen.Schedule, error) {
	switch name {
	case traceConstant:
		return loadgen.Constant(rate, length)
	case tracePoisson:
		return loadgen.Poisson(rate, length, seed)
	}
	var (
		s   trace.Series
		err error
	)
	if name == traceSynthetic {
		if length <= 0 {
			return loadgen.Schedule{}, fmt.Errorf("--duration %s: must be positive for a synthetic trace", length)
		}
		s, err = trace.Generate(trace.Synthetic(rate), time.Second, start+length, seed)
	} else {
		s, err = trace.Load(name)
	}
	if err != nil {
		return loadgen.Schedule{}, fmt.Errorf("--trace: %w", err)
	}
	if length == 0 { // the rest of the trace
		length = s.Span() - start
	}
	if s, err = trace.Window(s, start, length); err != nil {
		return loadgen.Schedule{}, fmt.Errorf("--window-start/--duration: %w", err)
	}
	if s, err = trace.ScaleToMean(s, rate); err != nil {
		return loadgen.Schedule{}, fmt.Errorf("--rate: %w", err)
	}
	arr, err := trace.Arrivals(s, seed)
	if err != nil {
		return loadgen.Schedule{}, fmt.Errorf("--trace %s: %w", name, err)
	}
	sched, err := loadgen.NewSchedule(arr, s.Span())
	if err != nil {
		return loadgen.Schedule{}, fmt.Errorf("arrivals of %s: %w", name, err)
	}
	return sched, nil
}

// serveMetrics serves reg on addr until the returned function is called.
func serveMetrics(addr string, reg *prometheus.Registry) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Warn("metrics server", "err", err)
		}
	}()
	slog.Info("serving load generator metrics", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// benchFlags are the flags of `aware loadgen bench`.
type benchFlags struct {
	rates          []int
	duration       time.Duration
	warmup         time.Duration
	pause          time.Duration
	arrivals       string
	seed           uint64
	tolerance      float64
	mustPassUpTo   float64
	maxOutstanding int
	json           bool
	serverLog      string
}

func newLoadgenBenchCmd() *cobra.Command {
	var fl benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark the load generator against a local workload server",
		Long: `Starts the workload server as a child process on loopback with the lightest
application available (one json2yaml segment of 250 bytes), then replays a flat schedule at
each --rates value for --duration and prints one line per rate: achieved rate, its error
against the target, latency and dispatch-lateness percentiles, drops, errors and whether
the achieved rate is within --tolerance. Server and generator share this machine's CPUs.
Fails when a rate up to --must-pass-up-to misses the tolerance.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, fl) },
	}
	f := cmd.Flags()
	f.IntSliceVar(&fl.rates, "rates", []int{250, 500, 1000, 2000, 3000, 4000}, "target rates in requests per second")
	f.DurationVar(&fl.duration, "duration", 10*time.Second, "replay time per rate")
	f.DurationVar(&fl.warmup, "warmup", 2*time.Second, "unreported warm-up at the first rate")
	f.DurationVar(&fl.pause, "pause", time.Second, "idle time between rates")
	f.StringVar(&fl.arrivals, "arrivals", traceConstant, `arrival process: "constant" or "poisson"`)
	f.Uint64Var(&fl.seed, "seed", 1, "seed of Poisson arrivals")
	f.Float64Var(&fl.tolerance, "tolerance", 0.02, "largest acceptable relative error of the achieved rate")
	f.Float64Var(&fl.mustPassUpTo, "must-pass-up-to", 2000, "fail if any rate up to this one misses the tolerance (0: never fail)")
	f.IntVar(&fl.maxOutstanding, "max-outstanding", loadgen.DefaultMaxOutstanding, "requests in flight at most")
	f.BoolVar(&fl.json, "json", false, "print the results as JSON")
	f.StringVar(&fl.serverLog, "server-log", "", "write the server's log to this file (default: shown only if it fails)")
	return cmd
}

func runBench(cmd *cobra.Command, fl benchFlags) error {
	ctx := cmd.Context()
	if fl.arrivals != traceConstant && fl.arrivals != tracePoisson {
		return fmt.Errorf("--arrivals %q: want %s or %s", fl.arrivals, traceConstant, tracePoisson)
	}
	rates := make([]float64, len(fl.rates))
	for i, r := range fl.rates {
		if r <= 0 {
			return fmt.Errorf("--rates: %d must be positive", r)
		}
		rates[i] = float64(r)
	}
	spec, err := benchApp()
	if err != nil {
		return err
	}
	child, cleanup, err := startBenchServer(ctx, spec, fl.serverLog)
	if err != nil {
		return err
	}
	defer cleanup()

	rows, runErr := loadgen.Bench(ctx, child.URL()+"/invoke", loadgen.BenchConfig{
		Rates: rates, Duration: fl.duration, Warmup: fl.warmup, Pause: fl.pause,
		Poisson: fl.arrivals == tracePoisson, Seed: fl.seed,
		Options: []loadgen.Option{loadgen.WithMaxOutstanding(fl.maxOutstanding)},
		AfterRate: func(row loadgen.BenchRow) error {
			rep := row.Report
			slog.Info("rate done", "target", row.Rate, "achieved", fmt.Sprintf("%.1f", rep.AchievedRate),
				"error", fmt.Sprintf("%+.2f%%", 100*rep.RateError()), "p99", rep.Latency.P99, "pass", row.Pass(fl.tolerance))
			if child.Exited() {
				return fmt.Errorf("workload server exited during the benchmark:\n%s", child.LogTail())
			}
			return nil
		},
	})
	if len(rows) > 0 {
		out := cmd.OutOrStdout()
		if fl.json {
			err = loadgen.WriteBenchJSON(out, rows, fl.tolerance)
		} else {
			fmt.Fprintf(out, "app: %s (%s size %d); %s arrivals, %s per rate; server and generator share %d CPUs\n",
				spec.Name, spec.Segments[0].Name, spec.Segments[0].Size, fl.arrivals, fl.duration, runtime.NumCPU())
			err = loadgen.WriteBenchTable(out, rows, fl.tolerance)
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
		if r.Rate <= fl.mustPassUpTo && !r.Pass(fl.tolerance) {
			failed = append(failed, strconv.FormatFloat(r.Rate, 'g', -1, 64))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("achieved rate not within %g%% of the target at %v req/s", 100*fl.tolerance, failed)
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
