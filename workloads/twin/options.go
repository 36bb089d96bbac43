package twin

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Labels the twin reads on Deployments and Pods (the generator's).
const (
	// LabelName names an object's application.
	LabelName = "app.kubernetes.io/name"
	// DefaultSelector selects the generated applications' objects.
	DefaultSelector = "app.kubernetes.io/part-of=aware"
	// DefaultContainer is the generated pods' workload container.
	DefaultContainer = "workload"
)

type config struct {
	namespace string
	selector  string
	container string
	tick      time.Duration
	simStep   time.Duration
	simOpts   []sim.Option
	addr      string
	seed      uint64
	workers   int
	log       *slog.Logger
	now       func() time.Time
}

func defaultConfig() config {
	return config{
		selector:  DefaultSelector,
		container: DefaultContainer,
		tick:      time.Second,
		simStep:   10 * time.Second,
		seed:      1,
		workers:   runtime.GOMAXPROCS(0),
		log:       slog.New(slog.DiscardHandler),
		now:       time.Now,
	}
}

func (c *config) validate() error {
	var errs []error
	if _, err := labels.Parse(c.selector); err != nil {
		errs = append(errs, fmt.Errorf("selector %q: %w", c.selector, err))
	}
	if c.container == "" {
		errs = append(errs, errors.New("container: empty name"))
	}
	if c.tick <= 0 {
		errs = append(errs, fmt.Errorf("tick %s: must be positive", c.tick))
	}
	if c.simStep < time.Second {
		errs = append(errs, fmt.Errorf("simulator step %s: must be at least 1s", c.simStep))
	}
	if c.workers < 1 {
		errs = append(errs, fmt.Errorf("workers %d: must be positive", c.workers))
	}
	if c.log == nil || c.now == nil {
		errs = append(errs, errors.New("logger and clock must not be nil"))
	}
	return errors.Join(errs...)
}

// Option configures a Twin.
type Option func(*config)

// WithNamespace watches only namespace ns (default: all namespaces).
func WithNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithSelector sets the label selector of the watched Deployments and Pods
// (default DefaultSelector; "" selects everything).
func WithSelector(s string) Option { return func(c *config) { c.selector = s } }

// WithContainer sets the name of the container whose limits are the
// application's allocation and whose metrics are exported (default
// DefaultContainer). A pod without it that has a single container uses
// that one.
func WithContainer(name string) Option { return func(c *config) { c.container = name } }

// WithTick sets the wall-clock time between simulator steps (default 1 s).
func WithTick(d time.Duration) Option { return func(c *config) { c.tick = d } }

// WithSimStep sets the simulated time per step, and so per tick (default
// 10 s: time runs ten times faster than the wall clock). The load shapes of
// the apps must be at this step.
func WithSimStep(d time.Duration) Option { return func(c *config) { c.simStep = d } }

// WithSimOptions passes options to the simulator (after the step).
func WithSimOptions(opts ...sim.Option) Option {
	return func(c *config) { c.simOpts = append(c.simOpts, opts...) }
}

// WithAddr makes Run serve the metrics on addr (host:port); empty (the
// default) leaves serving to the caller, through Handler.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithSeed seeds the simulator's measurement noise (default 1); each
// application draws from its own stream.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = seed } }

// WithWorkers sets how many goroutines step the applications (default
// GOMAXPROCS).
func WithWorkers(n int) Option { return func(c *config) { c.workers = n } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithClock sets the wall clock the counters advance by (default
// time.Now); tests step it by hand.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }
