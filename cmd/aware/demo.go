package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/loadgen"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/server"
)

// demoFlags are the flags of `aware workload demo`.
type demoFlags struct {
	services    string
	app         string
	trace       string
	rate        float64
	duration    time.Duration
	speed       float64
	seed        uint64
	calibrate   bool
	minDuration time.Duration
}

// newDemoCmd is `aware workload demo`: the real workloads end to end.
func newDemoCmd() *cobra.Command {
	var fl demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Real workloads end to end: quick calibration and a short trace replay against a served app",
		Long: `The main job on the embedded default. It starts a loopback S3 server (versitygw) and
PostgreSQL, measures every segment once quickly and compares the costs with the committed
profile (workloads/calibration/profile.json), then serves an example application and replays
a short window of a synthetic trace (daily cycle, noise, bursts) against it, open loop, and
prints the load generator's report beside the server's own counters.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.services, "services", servicesLocal, "object store and database: local, env or none")
	f.StringVar(&fl.app, "app", "mixed", "built-in example app (mixed, light) or an app spec file")
	f.StringVar(&fl.trace, "trace", traceSynthetic, `trace to replay: a file, or "synthetic", "constant", "poisson"`)
	f.Float64Var(&fl.rate, "rate", 30, "mean request rate of the replay (req/s)")
	f.DurationVar(&fl.duration, "duration", 45*time.Second, "replayed window, in trace time")
	f.Float64Var(&fl.speed, "speed", 1, "replay speed")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the inputs, the synthetic trace and the arrivals")
	f.BoolVar(&fl.calibrate, "calibrate", true, "run the quick calibration first")
	f.DurationVar(&fl.minDuration, "calibrate-min-duration", 100*time.Millisecond, "measuring time per segment and size")
	return cmd
}

func runDemo(ctx context.Context, out, progress io.Writer, fl demoFlags) error {
	dir, err := os.MkdirTemp("", "aware-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := segments.Env{Dir: mkdir(dir, "scratch"), Seed: int64(fl.seed)}
	stop, childEnv, err := startServices(ctx, fl.services, dir, &env)
	if err != nil {
		return err
	}
	defer stop()

	if fl.calibrate {
		if err := quickCalibration(ctx, out, progress, env, childEnv, fl); err != nil {
			return err
		}
	}
	return replay(ctx, out, env, fl)
}

func quickCalibration(ctx context.Context, out, progress io.Writer, env segments.Env, childEnv []string, fl demoFlags) error {
	fmt.Fprintln(out, "== Calibration (quick: one repeat; `make calibrate` writes the full profile)")
	targets, err := calibration.Targets(nil, env)
	if err != nil {
		return err
	}
	opts := calibration.Options{Repeats: 1, Warmup: 1, MinRequests: 3, MinDuration: fl.minDuration, MaxRequests: 2000, Rounds: 3, Concurrency: 4}
	measure, err := childMeasurer(childEnv, int64(fl.seed), opts)
	if err != nil {
		return err
	}
	p, err := calibration.Run(ctx, targets, opts, measure, progressLine(progress))
	fmt.Fprintln(progress)
	if err != nil {
		return err
	}
	if err := p.WriteTable(out); err != nil {
		return err
	}
	ref, err := calibration.Default()
	if err != nil {
		return err
	}
	return calibration.WriteComparison(out, calibration.CompareCPU(p, ref, 50e-6))
}

func replay(ctx context.Context, out io.Writer, env segments.Env, fl demoFlags) error {
	spec, err := app.Example(fl.app)
	if err != nil {
		if spec, err = app.Load(fl.app); err != nil {
			return fmt.Errorf("--app %q: neither a built-in example nor a readable spec: %w", fl.app, err)
		}
	}
	if objects, db := spec.Needs(); (objects && env.Objects == nil) || (db && env.DB == nil) {
		return fmt.Errorf("--app %s needs an object store or database, but --services is %q", spec.Name, fl.services)
	}
	sched, err := buildSchedule(fl.trace, fl.rate, 0, fl.duration, fl.seed)
	if err != nil {
		return err
	}
	addr, err := server.FreeLoopbackAddr()
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{Addr: addr, App: spec.Name, ShutdownTimeout: 10 * time.Second}, server.ChainSetup(spec, env))
	if err != nil {
		return err
	}
	srvCtx, cancel := context.WithCancel(ctx)
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Run(srvCtx) }()
	defer func() {
		cancel()
		<-srvErr
	}()
	select {
	case <-srv.Ready():
	case err := <-srvErr:
		srvErr <- err
		return fmt.Errorf("workload server: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}

	fmt.Fprintf(out, "\n== Trace replay: app %s (%d segments), %s trace, %s window at %.0f req/s mean, speed %g, %d arrivals\n",
		spec.Name, len(spec.Segments), fl.trace, fl.duration, fl.rate, fl.speed, len(sched.Arrivals))
	g, err := loadgen.New("http://"+addr+"/invoke", loadgen.WithSpeed(fl.speed))
	if err != nil {
		return err
	}
	rep, runErr := g.Run(ctx, sched)
	if err := rep.WriteTable(out); err != nil {
		return err
	}
	received, processed, failed, err := serverCounters(srv.Registry())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "server counters: received %.0f, processed %.0f, failed %.0f\n", received, processed, failed)
	return runErr
}

// serverCounters reads the workload server's request counters.
func serverCounters(reg prometheus.Gatherer) (received, processed, failed float64, err error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("gather server metrics: %w", err)
	}
	found := 0
	for _, mf := range mfs {
		var dst *float64
		switch mf.GetName() {
		case "aware_workload_requests_received_total":
			dst = &received
		case "aware_workload_requests_processed_total":
			dst = &processed
		case "aware_workload_requests_failed_total":
			dst = &failed
		default:
			continue
		}
		found++
		for _, m := range mf.GetMetric() {
			*dst += m.GetCounter().GetValue()
		}
	}
	if found != 3 {
		return 0, 0, 0, errors.New("server metrics: request counters missing")
	}
	return received, processed, failed, nil
}
