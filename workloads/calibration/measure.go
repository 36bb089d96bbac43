package calibration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/aware-autoscaler/aware/internal/quantile"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Options control a calibration run.
type Options struct {
	// Repeats is how many times every target is measured; repeats are
	// separated in time (all targets, then all targets again).
	Repeats int `json:"repeats"`
	// Warmup requests run before measuring.
	Warmup int `json:"warmup"`
	// A measurement runs at least MinRequests and at least MinDuration, but
	// stops at MaxRequests.
	MinRequests int           `json:"minRequests"`
	MinDuration time.Duration `json:"minDuration"`
	MaxRequests int           `json:"maxRequests"`
	// Rounds splits a measurement into this many equal rounds; the CPU
	// figure is the median of the rounds' per-request CPU, so that a
	// transient disturbance (a neighbour on the sibling hyperthread, a
	// database checkpoint) spoils one round, not the figure.
	Rounds int `json:"rounds"`
	// Concurrency is the number of simultaneous requests of the memory phase.
	Concurrency int `json:"concurrency"`
	// Services, when set, meters the external services' CPU, and segments
	// that use a service get Entry.ServiceCPUSeconds.
	Services ServiceMeter `json:"-"`
}

// DefaultOptions are the options of the committed profile.
func DefaultOptions() Options {
	return Options{Repeats: 2, Warmup: 3, MinRequests: 10, MinDuration: 2 * time.Second, MaxRequests: 5000, Rounds: 5, Concurrency: 4}
}

func (o Options) validate() error {
	var errs []error
	if o.Repeats < 1 {
		errs = append(errs, fmt.Errorf("repeats: %d must be at least 1", o.Repeats))
	}
	if o.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warmup: %d must not be negative", o.Warmup))
	}
	if o.MinRequests < 2 {
		errs = append(errs, fmt.Errorf("minRequests: %d must be at least 2", o.MinRequests))
	}
	if o.Rounds < 1 || o.Rounds > o.MinRequests {
		errs = append(errs, fmt.Errorf("rounds: %d must be between 1 and minRequests %d", o.Rounds, o.MinRequests))
	}
	if o.MaxRequests < o.MinRequests {
		errs = append(errs, fmt.Errorf("maxRequests: %d must be at least minRequests %d", o.MaxRequests, o.MinRequests))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency: %d must be at least 1", o.Concurrency))
	}
	return errors.Join(errs...)
}

// Target is one segment at one payload size.
type Target struct {
	Segment string
	Size    int
}

// Targets lists every registered size of the named segments (all segments
// when names is empty), skipping segments whose services are not in env.
func Targets(names []string, env segments.Env) ([]Target, error) {
	if len(names) == 0 {
		names = segments.Names()
	}
	var out []Target
	for _, n := range names {
		info, ok := segments.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("segment %q: unknown (known: %v)", n, segments.Names())
		}
		if !available(info, env) {
			continue
		}
		for _, s := range info.Sizes {
			out = append(out, Target{Segment: n, Size: s})
		}
	}
	return out, nil
}

func available(info segments.Info, env segments.Env) bool {
	for _, need := range info.Needs {
		if (need == "objects" && env.Objects == nil) || (need == "db" && env.DB == nil) {
			return false
		}
	}
	return true
}

// Progress is called after each measurement with the number done and total.
type Progress func(done, total int, t Target)

// Measurer measures one repeat of one target. The entry it returns carries
// one figure in CPUSecondsRepeats; when first is set it also carries the
// service times, I/O and memory figures.
type Measurer func(ctx context.Context, t Target, first bool) (Entry, error)

// InProcess returns a Measurer that runs the segments in this process.
// Targets then share one Go runtime: the garbage collector's state that one
// target leaves behind changes the next one's CPU figure by up to ~25 %, so
// the calibrate command measures each target in a fresh child process that
// calls MeasureOne instead.
func InProcess(env segments.Env, opts Options) Measurer {
	return func(ctx context.Context, t Target, first bool) (Entry, error) {
		return MeasureOne(ctx, t, env, opts, first)
	}
}

// Run measures every target opts.Repeats times with measure and returns the
// profile (Command, CreatedAt and Machine are filled in; the caller may set
// Command). Repeats are separated in time: all targets, then all again.
func Run(ctx context.Context, targets []Target, opts Options, measure Measurer, progress Progress) (*Profile, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("calibration options: %w", err)
	}
	if len(targets) == 0 {
		return nil, errors.New("calibration: no targets")
	}
	p := &Profile{Version: Version, CreatedAt: time.Now().UTC().Truncate(time.Second), Machine: DescribeMachine(), Options: opts}
	entries := make([]Entry, len(targets))
	total, done := len(targets)*opts.Repeats, 0
	for r := range opts.Repeats {
		for i, t := range targets {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			e, err := measure(ctx, t, r == 0)
			if err != nil {
				return nil, fmt.Errorf("calibrate %s size %d: %w", t.Segment, t.Size, err)
			}
			if len(e.CPUSecondsRepeats) != 1 {
				return nil, fmt.Errorf("calibrate %s size %d: measurer returned %d CPU figures, want 1", t.Segment, t.Size, len(e.CPUSecondsRepeats))
			}
			if r == 0 {
				entries[i] = e
				p.RSSBaseBytes = max(p.RSSBaseBytes, e.RSSBaseBytes)
			} else {
				entries[i].CPUSecondsRepeats = append(entries[i].CPUSecondsRepeats, e.CPUSecondsRepeats[0])
				entries[i].ServiceCPURepeats = append(entries[i].ServiceCPURepeats, e.ServiceCPURepeats...)
			}
			done++
			if progress != nil {
				progress(done, total, t)
			}
		}
	}
	for i := range entries {
		entries[i].CPUSeconds = quantile.Median(entries[i].CPUSecondsRepeats)
		if len(entries[i].ServiceCPURepeats) > 0 {
			entries[i].ServiceCPUSeconds = quantile.Median(entries[i].ServiceCPURepeats)
		}
	}
	p.Entries = entries
	p.Sort()
	return p, nil
}

// MeasureOne measures one repeat of one target in this process (see
// Measurer).
func MeasureOne(ctx context.Context, t Target, env segments.Env, opts Options, first bool) (Entry, error) {
	if err := opts.validate(); err != nil {
		return Entry{}, fmt.Errorf("calibration options: %w", err)
	}
	var e Entry
	debug.FreeOSMemory()
	base, err := rss()
	if err != nil {
		return Entry{}, err
	}
	e.RSSBaseBytes = base
	if err := measureTarget(ctx, t, env, opts, first, &e); err != nil {
		return Entry{}, err
	}
	e.CPUSeconds = e.CPUSecondsRepeats[0]
	if len(e.ServiceCPURepeats) > 0 {
		e.ServiceCPUSeconds = e.ServiceCPURepeats[0]
	}
	return e, nil
}

// usesServices reports whether a segment calls the database or the object
// store.
func usesServices(info segments.Info) bool {
	return slices.Contains(info.Needs, "db") || slices.Contains(info.Needs, "objects")
}

// measureTarget runs one repeat of one target into e. The first repeat also
// measures service times, I/O and memory; later repeats add a CPU figure.
func measureTarget(ctx context.Context, t Target, env segments.Env, opts Options, first bool, e *Entry) error {
	info, ok := segments.Lookup(t.Segment)
	if !ok {
		return fmt.Errorf("segment %q: unknown", t.Segment)
	}
	inst, err := segments.New(ctx, segments.Spec{Name: t.Segment, Size: t.Size}, env)
	if err != nil {
		return err
	}
	defer inst.Close(context.WithoutCancel(ctx))
	for range opts.Warmup {
		if _, err := inst.Run(ctx); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	var (
		walls    []float64
		payload  segments.Result
		roundCPU []float64
		roundSvc []float64 // the services' CPU per request, if metered
		total    counters  // summed over the rounds
	)
	meter := opts.Services
	if !usesServices(info) {
		meter = nil
	}
	perRound := opts.MinDuration / time.Duration(opts.Rounds)
	for r := range opts.Rounds {
		runtime.GC()
		before, err := readCounters()
		if err != nil {
			return err
		}
		var svc0 time.Duration
		if meter != nil {
			if svc0, err = meter(); err != nil {
				return err
			}
		}
		// Each round does its share of MinRequests, MinDuration and
		// MaxRequests.
		minN := share(opts.MinRequests, r, opts.Rounds)
		maxN := share(opts.MaxRequests, r, opts.Rounds)
		n, start := 0, time.Now()
		for n < maxN && (n < minN || time.Since(start) < perRound) {
			t0 := time.Now()
			res, err := inst.Run(ctx)
			if err != nil {
				return err
			}
			walls = append(walls, time.Since(t0).Seconds())
			payload.Add(res)
			n++
		}
		after, err := readCounters()
		if err != nil {
			return err
		}
		if meter != nil {
			svc1, err := meter()
			if err != nil {
				return err
			}
			roundSvc = append(roundSvc, (svc1-svc0).Seconds()/float64(n))
		}
		roundCPU = append(roundCPU, (after.cpu-before.cpu).Seconds()/float64(n))
		total.add(after.sub(before))
	}
	e.CPUSecondsRepeats = append(e.CPUSecondsRepeats, quantile.Median(roundCPU))
	if len(roundSvc) > 0 {
		e.ServiceCPURepeats = append(e.ServiceCPURepeats, quantile.Median(roundSvc))
	}
	if !first {
		return nil
	}
	n := float64(len(walls))
	e.Segment, e.Unit, e.Size, e.Requests = t.Segment, info.Unit, t.Size, len(walls)
	e.ServiceMean, e.ServiceCV = meanCV(walls)
	e.ServiceP95 = quantile.Linear(walls, 0.95)
	e.AllocBytes = float64(total.allocBytes) / n
	e.ReadBytes = float64(total.rchar) / n
	e.WriteBytes = float64(total.wchar) / n
	e.PayloadIn, e.PayloadOut = float64(payload.BytesIn)/n, float64(payload.BytesOut)/n
	e.Concurrency = opts.Concurrency
	// Memory phases: a few requests alone, then Concurrency at once.
	reqs := max(opts.MinRequests/2, 2)
	if e.WorkingSet1, err = workingSet(ctx, inst, 1, reqs); err != nil {
		return err
	}
	if e.WorkingSet, err = workingSet(ctx, inst, opts.Concurrency, reqs); err != nil {
		return err
	}
	return nil
}

// workingSet returns the peak growth of the resident set over its level after
// returning freed memory to the OS, while conc workers each run reqs requests.
func workingSet(ctx context.Context, inst segments.Instance, conc, reqs int) (int64, error) {
	debug.FreeOSMemory()
	base, err := rss()
	if err != nil {
		return 0, err
	}
	peak := base
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := rss(); err == nil && v > peak {
				peak = v
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range conc {
		wg.Go(func() {
			for range reqs {
				if _, err := inst.Run(ctx); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("memory phase (concurrency %d): %w", conc, err)
	}
	return max(peak-base, 0), nil
}

// share is round r's part of total split into rounds near-equal parts.
func share(total, r, rounds int) int {
	return total*(r+1)/rounds - total*r/rounds
}

func meanCV(xs []float64) (mean, cv float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 || mean == 0 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs)-1)) / mean
}
