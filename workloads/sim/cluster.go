package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

type config struct {
	step, coldStart, resizeDelay, restartDelay, maxBackoff, timeout float64 // seconds
	restart, randomStart                                            bool
	idleCPU, maxRho, delayShape, alpha                              float64
	serviceCores, serviceShared                                     float64
	episode, workers                                                int
	bounds                                                          gym.Bounds
	caps                                                            gym.Capacities
	overheads                                                       Overheads
}

func defaultConfig() config {
	return config{
		step: 30, coldStart: 10, resizeDelay: 1, restartDelay: 10, maxBackoff: 300, timeout: 10,
		idleCPU: 0.002, maxRho: 0.99, delayShape: 1, alpha: gym.DefaultAlpha,
		episode: 100, workers: runtime.GOMAXPROCS(0),
		bounds: gym.DefaultBounds(), caps: gym.DefaultCapacities(), overheads: DefaultOverheads(),
	}
}

// Option configures a Cluster.
type Option func(*config)

// WithStep sets the simulated time per step (default 30 s: AWARE's
// observation window).
func WithStep(d time.Duration) Option { return func(c *config) { c.step = d.Seconds() } }

// WithColdStart sets how long a new pod takes to become ready (default 10 s).
func WithColdStart(d time.Duration) Option { return func(c *config) { c.coldStart = d.Seconds() } }

// WithRestartResize makes vertical changes restart pods (surging: the old
// pods serve until the new ones are ready) instead of resizing in place
// (default, ready after 1 s).
func WithRestartResize() Option { return func(c *config) { c.restart = true } }

// WithRestartDelay sets the first restart back-off after an OOM kill
// (default 10 s, doubling per consecutive step with kills, at most 5 min).
func WithRestartDelay(d time.Duration) Option {
	return func(c *config) { c.restartDelay = d.Seconds() }
}

// WithRandomStart makes every Reset start each application at a point of
// its load trace drawn from the reset's seed instead of at its offset, so
// that episodes reset with different seeds see different times of day (a
// policy or an embedding trained on them cannot learn one window by heart).
// Steps within and after an episode still follow the trace in order.
func WithRandomStart() Option { return func(c *config) { c.randomStart = true } }

// WithTimeout sets how long a request may wait before it is dropped
// (default 10 s).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d.Seconds() } }

// WithIdleCPU sets the CPU a pod burns idle, in cores (default 0.002).
func WithIdleCPU(cores float64) Option { return func(c *config) { c.idleCPU = cores } }

// WithServices gives each application's external services (database,
// object store) cores CPU cores, on which other processes also spend shared
// CPU-seconds per request of the application (a load generator on the
// services' node, as in `aware sim validate`; 0 in a cluster). Requests then
// wait at the services as at a processor-sharing server loaded by their
// Model.ServiceCPU and shared, and the services bound the application's
// throughput at cores/(ServiceCPU+shared). The default, 0 cores, leaves them
// unlimited: a request costs its calibrated round trip whatever the load.
func WithServices(cores, shared float64) Option {
	return func(c *config) { c.serviceCores, c.serviceShared = cores, shared }
}

// WithDelayShape scales the queueing delay's spread (default 1: an
// exponential delay).
func WithDelayShape(f float64) Option { return func(c *config) { c.delayShape = f } }

// WithAlpha sets the reward's weight of SLO preservation (default 0.5).
func WithAlpha(a float64) Option { return func(c *config) { c.alpha = a } }

// WithEpisode sets the episode length in steps (default 100).
func WithEpisode(n int) Option { return func(c *config) { c.episode = n } }

// WithBounds sets the action bounds (default gym.DefaultBounds).
func WithBounds(b gym.Bounds) Option { return func(c *config) { c.bounds = b } }

// WithOverheads sets the per-request HTTP costs (default DefaultOverheads).
func WithOverheads(o Overheads) Option { return func(c *config) { c.overheads = o } }

// WithWorkers sets how many goroutines step the cluster (default GOMAXPROCS).
func WithWorkers(n int) Option { return func(c *config) { c.workers = n } }

func (c *config) validate() error {
	for _, v := range []struct {
		name string
		x    float64
	}{{"step", c.step}, {"timeout", c.timeout}, {"max back-off", c.maxBackoff}} {
		if !(v.x > 0) {
			return fmt.Errorf("sim: %s %gs must be positive", v.name, v.x)
		}
	}
	if c.coldStart < 0 || c.resizeDelay < 0 || c.restartDelay < 0 || c.idleCPU < 0 || c.delayShape < 0 {
		return errors.New("sim: delays, idle CPU and delay shape must not be negative")
	}
	if !(c.serviceCores >= 0) || math.IsInf(c.serviceCores, 1) || !(c.serviceShared >= 0) || math.IsInf(c.serviceShared, 1) {
		return fmt.Errorf("sim: service cores %g and shared CPU %g per request must be finite and not negative (0 cores: unlimited)", c.serviceCores, c.serviceShared)
	}
	if c.alpha < 0 || c.alpha > 1 {
		return fmt.Errorf("sim: alpha %g outside [0, 1]", c.alpha)
	}
	if c.episode < 1 || c.workers < 1 {
		return fmt.Errorf("sim: episode %d and workers %d must be positive", c.episode, c.workers)
	}
	return c.bounds.Validate()
}

// Cluster is many simulated applications stepped together. It implements
// gym.VecEnv; Set and Advance drive it with allocations directly.
type Cluster struct {
	cfg  config
	prof *calibration.Profile
	apps []App
	st   []state
	next []Allocation
	seed uint64
}

var _ gym.VecEnv = (*Cluster)(nil)

// New builds a cluster of apps modelled from prof, reset with seed 0.
func New(prof *calibration.Profile, apps []App, opts ...Option) (*Cluster, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(apps) == 0 {
		return nil, errors.New("sim: no applications")
	}
	c := &Cluster{cfg: cfg, prof: prof, apps: apps, st: make([]state, len(apps)), next: make([]Allocation, len(apps))}
	for i := range apps {
		if err := apps[i].Validate(); err != nil {
			return nil, fmt.Errorf("sim: apps[%d]: %w", i, err)
		}
		if apps[i].Model != nil {
			c.st[i].model = *apps[i].Model
			continue
		}
		m, err := NewModel(prof, apps[i].Chain, apps[i].Speed, cfg.overheads)
		if err != nil {
			return nil, fmt.Errorf("sim: apps[%d] (%s): %w", i, apps[i].Name, err)
		}
		c.st[i].model = m
	}
	c.resetAll(0)
	return c, nil
}

// appSeed derives app i's noise seed from a run seed.
func appSeed(seed uint64, i int) uint64 {
	return seed*0x9E3779B97F4A7C15 + uint64(i)*0xBF58476D1CE4E5B9 + 1
}

func (c *Cluster) resetAll(seed uint64) {
	c.seed = seed
	for i := range c.st {
		c.st[i].reset(&c.apps[i], c.st[i].model, appSeed(seed, i), c.cfg.randomStart)
		c.next[i] = c.apps[i].Initial
	}
}

// Len is the number of applications.
func (c *Cluster) Len() int { return len(c.apps) }

// App returns application i's definition.
func (c *Cluster) App(i int) App { return c.apps[i] }

// Model returns application i's current per-request model.
func (c *Cluster) Model(i int) Model { return c.st[i].model }

// StepSeconds is the simulated time per step.
func (c *Cluster) StepSeconds() float64 { return c.cfg.step }

// Bounds are the action bounds.
func (c *Cluster) Bounds() gym.Bounds { return c.cfg.bounds }

// Allocation is application i's allocation in effect.
func (c *Cluster) Allocation(i int) Allocation { return c.st[i].alloc }

// Set chooses application i's allocation for the next step, clamped to the
// bounds.
func (c *Cluster) Set(i int, a Allocation) { c.next[i] = c.clamp(a) }

func (c *Cluster) clamp(a Allocation) Allocation {
	b := c.cfg.bounds
	a.Replicas = max(b.MinReplicas, min(b.MaxReplicas, a.Replicas))
	a.CPU = math.Max(b.MinCPU, math.Min(b.MaxCPU, a.CPU))
	a.Memory = math.Max(b.MinMemory, math.Min(b.MaxMemory, a.Memory))
	return a
}

// Advance simulates one step of every application.
func (c *Cluster) Advance(ctx context.Context) error {
	return c.parallel(ctx, func(i int) { c.st[i].advance(&c.apps[i], c.next[i], &c.cfg) })
}

// ForEach calls f(i) for every application on the cluster's workers, as
// Advance steps them; callers use it to run per-application policies in
// parallel. f must touch only application i's state.
func (c *Cluster) ForEach(ctx context.Context, f func(i int)) error { return c.parallel(ctx, f) }

// parallel runs f for every application on the configured workers.
func (c *Cluster) parallel(ctx context.Context, f func(i int)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := len(c.st)
	w := min(c.cfg.workers, max(1, n/64))
	if w <= 1 {
		for i := range n {
			f(i)
		}
		return nil
	}
	var wg sync.WaitGroup
	chunk := (n + w - 1) / w
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				f(i)
			}
		}()
	}
	wg.Wait()
	return nil
}

// Metrics is application i's last step as Prometheus would report it.
func (c *Cluster) Metrics(i int) gym.Metrics { return c.st[i].m }

// Reward is application i's last reward.
func (c *Cluster) Reward(i int) float64 { return c.st[i].reward }

// Info is application i's last step's details.
func (c *Cluster) Info(i int) gym.Info {
	s := &c.st[i]
	return gym.Info{Step: s.step, Metrics: s.m, SP: s.sp, SLOViolated: s.sp < 1}
}

// ObservationSpace is gym.ObservationSpace.
func (c *Cluster) ObservationSpace() gym.Space { return gym.ObservationSpace() }

// ActionSpace is the box of the cluster's bounds.
func (c *Cluster) ActionSpace() gym.Space { return gym.ActionSpace(c.cfg.bounds) }

// Reset puts every application back at its trace offset with its initial
// allocation, reseeds its noise from seed, simulates one step under the
// initial allocation, and writes the observations.
func (c *Cluster) Reset(ctx context.Context, seed uint64, obs []float64) error {
	if len(obs) != len(c.st)*gym.StateDim {
		return fmt.Errorf("sim: reset: obs has %d values, want %d", len(obs), len(c.st)*gym.StateDim)
	}
	c.resetAll(seed)
	if err := c.Advance(ctx); err != nil {
		return err
	}
	for i := range c.st {
		c.st[i].step = 0
		c.st[i].observe(obs[i*gym.StateDim:(i+1)*gym.StateDim], &c.cfg)
	}
	return nil
}

// Step applies one action per application (rows of actions: replicas,
// CPU cores, memory bytes; replicas rounded), simulates one step and writes
// observations, rewards and episode ends. Episodes are consecutive windows
// of a running service: after an episode ends, the next Step starts a new
// one where the last left off.
func (c *Cluster) Step(ctx context.Context, actions, obs, rewards []float64, done []bool) error {
	n, d := len(c.st), gym.StateDim
	if len(actions) != n*gym.ActDim || len(obs) != n*d || len(rewards) != n || len(done) != n {
		return fmt.Errorf("sim: step: got %d actions, %d obs, %d rewards, %d done for %d apps (want %d, %d, %d, %d)",
			len(actions), len(obs), len(rewards), len(done), n, n*gym.ActDim, n*d, n, n)
	}
	for i := range n {
		a := actions[i*gym.ActDim : (i+1)*gym.ActDim]
		if math.IsNaN(a[0]) || math.IsNaN(a[1]) || math.IsNaN(a[2]) {
			return fmt.Errorf("sim: step: action of app %d (%s) has NaN: %v", i, c.apps[i].Name, a)
		}
		if c.st[i].step >= c.cfg.episode {
			c.st[i].step = 0
		}
		c.next[i] = c.clamp(Allocation{Replicas: int(math.Round(a[0])), CPU: a[1], Memory: a[2]})
	}
	return c.parallel(ctx, func(i int) {
		s := &c.st[i]
		s.advance(&c.apps[i], c.next[i], &c.cfg)
		s.observe(obs[i*d:(i+1)*d], &c.cfg)
		rewards[i] = s.reward
		done[i] = s.step >= c.cfg.episode
	})
}
