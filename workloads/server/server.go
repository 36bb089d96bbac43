package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// App is a prepared application: Run once per request, Close to run its
// teardown hooks. *app.Chain implements it.
type App interface {
	Runner
	Close(ctx context.Context) error
}

// Setup prepares the application (runs its setup hooks). Run calls it once,
// after the listener is up, so that /healthz answers during a long setup.
type Setup func(ctx context.Context) (App, error)

// ChainSetup returns a Setup that prepares spec in env with app.Prepare.
func ChainSetup(spec app.Spec, env segments.Env) Setup {
	return func(ctx context.Context) (App, error) {
		return app.Prepare(ctx, spec, env)
	}
}

// Server serves one application over HTTP.
type Server struct {
	cfg     Config
	setup   Setup
	log     *slog.Logger
	ln      net.Listener
	closers []namedCloser
	m       *metrics
	h       *handler
	mux     *http.ServeMux
	ready   chan struct{}
	started atomic.Bool
}

// New validates cfg and builds a server that will prepare its application
// with setup when Run starts.
func New(cfg Config, setup Setup, opts ...Option) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server config: %w", err)
	}
	if setup == nil {
		return nil, errors.New("server: setup must not be nil")
	}
	s := &Server{cfg: cfg, setup: setup, log: slog.Default(), ready: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	s.m = newMetrics(cfg.App)
	s.h = newHandler(cfg.App, cfg.MaxInFlight, cfg.Concurrency, s.m, s.log)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/invoke", s.h.invoke)
	s.mux.HandleFunc("/healthz", s.h.healthz)
	s.mux.HandleFunc("/readyz", s.h.readyz)
	s.mux.Handle("/metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{
		Registry:          s.m.reg,
		EnableOpenMetrics: true,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}))
	return s, nil
}

// Handler returns the server's HTTP handler (/invoke, /healthz, /readyz,
// /metrics).
func (s *Server) Handler() http.Handler { return s.mux }

// Registry returns the server's Prometheus registry.
func (s *Server) Registry() *prometheus.Registry { return s.m.reg }

// Ready is closed once the application is set up and the server is ready.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Run listens, prepares the application and serves until ctx is cancelled,
// then shuts down gracefully (see the package documentation). It returns nil
// after a clean shutdown. A Server runs once.
func (s *Server) Run(ctx context.Context) (err error) {
	if s.started.Swap(true) {
		return errors.New("server: Run called more than once")
	}
	if s.cfg.GOMAXPROCS > 0 {
		runtime.GOMAXPROCS(s.cfg.GOMAXPROCS)
	}
	s.logStartup()
	ln := s.ln
	if ln == nil {
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("listen %s: %w", s.cfg.Addr, err)
		}
	}
	// Requests run under runCtx: it outlives ctx so that in-flight requests
	// can drain, and is cancelled only when draining times out.
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRuns()
	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return runCtx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	s.log.Info("workload server listening", "app", s.cfg.App, "addr", ln.Addr().String())

	a, err := s.prepare(ctx)
	if err != nil {
		shutErr := s.stopHTTP(srv, cancelRuns, serveErr)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return errors.Join(shutErr, s.closeClients())
		}
		return errors.Join(err, shutErr, s.closeClients())
	}
	s.h.setRunner(a)
	close(s.ready)
	s.log.Info("workload server ready", "app", s.cfg.App)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		serveErr <- err // let stopHTTP see it
	}
	s.log.Info("workload server shutting down", "app", s.cfg.App, "drainTimeout", s.cfg.ShutdownTimeout)
	s.h.setReady(false)
	if s.cfg.DrainDelay > 0 && ctx.Err() != nil {
		time.Sleep(s.cfg.DrainDelay)
	}
	errs := []error{s.stopHTTP(srv, cancelRuns, serveErr)}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.SetupTimeout)
	defer cancel()
	if err := a.Close(tctx); err != nil {
		errs = append(errs, fmt.Errorf("teardown app %s: %w", s.cfg.App, err))
	}
	errs = append(errs, s.closeClients())
	err = errors.Join(errs...)
	if err == nil {
		s.log.Info("workload server stopped", "app", s.cfg.App)
	}
	return err
}

func (s *Server) prepare(ctx context.Context) (App, error) {
	sctx, cancel := context.WithTimeout(ctx, s.cfg.SetupTimeout)
	defer cancel()
	start := time.Now()
	a, err := s.setup(sctx)
	if err != nil {
		return nil, fmt.Errorf("set up app %s: %w", s.cfg.App, err)
	}
	if a == nil {
		return nil, fmt.Errorf("set up app %s: setup returned no application", s.cfg.App)
	}
	s.log.Info("app set up", "app", s.cfg.App, "took", time.Since(start).Round(time.Millisecond))
	return a, nil
}

// stopHTTP stops accepting, drains in-flight requests within the shutdown
// timeout, cancels those still running after it, and waits until no request
// runs the application any more.
func (s *Server) stopHTTP(srv *http.Server, cancelRuns context.CancelFunc, serveErr <-chan error) error {
	var errs []error
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("drain timed out; cancelling in-flight requests", "app", s.cfg.App, "inFlight", s.h.inFlight.Load())
		cancelRuns()
		if cerr := srv.Close(); cerr != nil {
			errs = append(errs, fmt.Errorf("close http server: %w", cerr))
		}
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	// Handlers may still be returning after Close; the app must not be torn
	// down under them. Cancelled runs return promptly; bound the wait anyway.
	wctx, wcancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout+5*time.Second)
	defer wcancel()
	if err := s.h.runs.closeAndWait(wctx); err != nil {
		errs = append(errs, fmt.Errorf("requests still running after cancellation: %w", err))
	}
	return errors.Join(errs...)
}

func (s *Server) closeClients() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		c := s.closers[i]
		if err := c.close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", c.name, err))
		}
	}
	s.closers = nil
	return errors.Join(errs...)
}

func (s *Server) logStartup() {
	attrs := []any{"app", s.cfg.App, "gomaxprocs", runtime.GOMAXPROCS(0), "numCPU", runtime.NumCPU()}
	if s.cfg.GOMAXPROCS > 0 {
		attrs = append(attrs, "gomaxprocsOverride", s.cfg.GOMAXPROCS)
	}
	if lim, err := ReadCPULimit(); err != nil {
		attrs = append(attrs, "cgroupCPU", "unreadable: "+err.Error())
	} else {
		attrs = append(attrs, "cgroupCPUFile", lim.File, "cgroupCPURaw", lim.Raw, "cgroupCPULimit", lim.String())
	}
	s.log.Info("workload server starting", attrs...)
}
