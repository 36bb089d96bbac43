package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Defaults used when the corresponding Config field is zero.
const (
	DefaultAddr            = "127.0.0.1:8080"
	DefaultShutdownTimeout = 30 * time.Second
	DefaultSetupTimeout    = 10 * time.Minute
)

// Config holds the server's settings.
type Config struct {
	// Addr is the TCP listen address (host:port); port 0 picks a free port.
	Addr string
	// App names the application; it is the const label "app" of every
	// workload metric.
	App string
	// MaxInFlight caps concurrently running requests; excess requests get
	// 503 and are counted as failed with reason "overload". 0 is unlimited.
	// It counts every request in the server, waiting for a Concurrency slot
	// or running.
	MaxInFlight int
	// Concurrency caps the requests running the application at once; further
	// requests wait in FIFO order (holding a goroutine and their connection,
	// not the application's working set) and are not rejected. A waiting
	// request whose client goes away leaves the queue without running and is
	// counted as failed with reason "canceled_waiting". 0 is unbounded.
	Concurrency int
	// ShutdownTimeout bounds how long in-flight requests may drain on
	// shutdown before they are cancelled.
	ShutdownTimeout time.Duration
	// DrainDelay keeps serving for this long after readiness turns false on
	// shutdown, so that load balancers stop routing before the listener
	// closes. 0 closes at once.
	DrainDelay time.Duration
	// SetupTimeout bounds the application's setup hooks.
	SetupTimeout time.Duration
	// GOMAXPROCS, when positive, overrides the Go runtime's choice (which
	// already follows the container's CPU limit). It is process-wide.
	GOMAXPROCS int
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.SetupTimeout == 0 {
		c.SetupTimeout = DefaultSetupTimeout
	}
	return c
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr: %q: %w", c.Addr, err))
	}
	if c.App == "" {
		errs = append(errs, errors.New("app: must name the application"))
	}
	if c.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("maxInFlight: %d must not be negative (0 is unlimited)", c.MaxInFlight))
	}
	if c.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency: %d must not be negative (0 is unbounded)", c.Concurrency))
	}
	if c.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("shutdownTimeout: %s must not be negative", c.ShutdownTimeout))
	}
	if c.DrainDelay < 0 {
		errs = append(errs, fmt.Errorf("drainDelay: %s must not be negative", c.DrainDelay))
	}
	if c.SetupTimeout < 0 {
		errs = append(errs, fmt.Errorf("setupTimeout: %s must not be negative", c.SetupTimeout))
	}
	if c.GOMAXPROCS < 0 {
		errs = append(errs, fmt.Errorf("gomaxprocs: %d must not be negative (0 is automatic)", c.GOMAXPROCS))
	}
	return errors.Join(errs...)
}

// Option customises a Server.
type Option func(*Server)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithListener makes Run serve on ln instead of listening on Config.Addr.
// Run closes ln.
func WithListener(ln net.Listener) Option { return func(s *Server) { s.ln = ln } }

// WithCloser registers a function Run calls after the application is torn
// down, to close an external client (object store, database). Closers run in
// reverse order of registration.
func WithCloser(name string, close func() error) Option {
	return func(s *Server) { s.closers = append(s.closers, namedCloser{name, close}) }
}

type namedCloser struct {
	name  string
	close func() error
}
