package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/loadgen"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/server"
	"github.com/aware-autoscaler/aware/workloads/services"
)

// Config is one demo. Errors name the flags of `aware workload demo`.
type Config struct {
	Services    string        // services.Local, services.Env or services.None (--services)
	App         string        // built-in example app (mixed, light) or an app spec file
	Trace       string        // trace file or pseudo trace name (loadgen.BuildSchedule)
	Rate        float64       // mean request rate of the replay
	Duration    time.Duration // replayed window, in trace time
	Speed       float64       // replay speed
	Seed        uint64        // of the inputs, the synthetic trace and the arrivals
	Calibrate   bool          // run the quick calibration first
	MinDuration time.Duration // measuring time per segment and size
}

// Run runs the demo, writing the results to out and the calibration's
// progress to progress.
func Run(ctx context.Context, cfg Config, out, progress io.Writer) error {
	env, childEnv, cleanup, err := services.Scratch(cfg.Services, "aware-run-")(ctx, int64(cfg.Seed))
	if err != nil {
		return err
	}
	defer cleanup()
	if cfg.Calibrate {
		if err := quickCalibration(ctx, out, progress, env, childEnv, cfg); err != nil {
			return err
		}
	}
	return replay(ctx, out, env, cfg)
}

func quickCalibration(ctx context.Context, out, progress io.Writer, env segments.Env, childEnv []string, cfg Config) error {
	fmt.Fprintln(out, "== Calibration (quick: one repeat; `make calibrate` writes the full profile)")
	targets, err := calibration.Targets(nil, env)
	if err != nil {
		return err
	}
	opts := calibration.Options{Repeats: 1, Warmup: 1, MinRequests: 3, MinDuration: cfg.MinDuration, MaxRequests: 2000, Rounds: 3, Concurrency: 4}
	measure, err := calibration.ChildMeasurer(childEnv, int64(cfg.Seed), opts)
	if err != nil {
		return err
	}
	p, err := calibration.Run(ctx, targets, opts, measure, calibration.ProgressLine(progress))
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

func replay(ctx context.Context, out io.Writer, env segments.Env, cfg Config) error {
	spec, err := app.Example(cfg.App)
	if err != nil {
		if spec, err = app.Load(cfg.App); err != nil {
			return fmt.Errorf("--app %q: neither a built-in example nor a readable spec: %w", cfg.App, err)
		}
	}
	if objects, db := spec.Needs(); (objects && env.Objects == nil) || (db && env.DB == nil) {
		return fmt.Errorf("--app %s needs an object store or database, but --services is %q", spec.Name, cfg.Services)
	}
	sched, err := loadgen.BuildSchedule(cfg.Trace, cfg.Rate, 0, cfg.Duration, cfg.Seed)
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
		spec.Name, len(spec.Segments), cfg.Trace, cfg.Duration, cfg.Rate, cfg.Speed, len(sched.Arrivals))
	g, err := loadgen.New("http://"+addr+"/invoke", loadgen.WithSpeed(cfg.Speed))
	if err != nil {
		return err
	}
	rep, runErr := g.Run(ctx, sched)
	if err := rep.WriteTable(out); err != nil {
		return err
	}
	received, processed, failed, err := server.RequestCounters(srv.Registry())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "server counters: received %.0f, processed %.0f, failed %.0f\n", received, processed, failed)
	return runErr
}
