package validation

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/internal/quantile"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Case is one validation run: an application at one allocation under one
// load window.
type Case struct {
	App   string
	Chain []segments.Spec
	// CPU is the pod's CPU limit in cores (one replica).
	CPU float64
	// Rates is the load in requests/s, one value per second.
	Rates []float64
	// Trace names where Rates came from, for the table.
	Trace string
	// Concurrency is how many requests the server runs at once (its
	// --concurrency; the simulated app's too); 0 is unbounded.
	Concurrency int
}

// MeanRate is the mean of c.Rates in requests/s.
func (c Case) MeanRate() float64 {
	var sum float64
	for _, r := range c.Rates {
		sum += r
	}
	return sum / float64(len(c.Rates))
}

// Measured is what a run reports, real or simulated; as errors (Row.Errors,
// Summary, Targets) each field is a fraction instead.
type Measured struct {
	CPU        float64 // cores, mean over the window
	Throughput float64 // completed requests/s
	P95        float64 // seconds
	// Memory is the server's (the pod's) working set in bytes, mean over the
	// window.
	Memory float64
	// P50 is the median latency in seconds (real runs only; what
	// MeasureOverheads reads).
	P50 float64 `json:",omitempty"`
	// Client is the CPU-seconds per completed request that the validating
	// process (the load generator) spent on the cores it shares with the
	// services; real runs only.
	Client float64
}

// Method says how a real run was limited and measured.
type Method struct {
	// Quota says how the real run's CPU was limited.
	Quota string
	// MemorySource says what the real memory figure is.
	MemorySource string
}

// Row is one compared case.
type Row struct {
	Case Case
	Method
	// Real is the median of the real repeats (each field on its own), Sim
	// the simulation.
	Real, Sim Measured
	// Repeats holds each real run when the case ran more than once.
	Repeats []Measured `json:",omitempty"`
}

// MedianOf is the field-by-field median of runs.
func MedianOf(runs []Measured) Measured {
	var c, t, p, m, cl, p50 []float64
	for _, r := range runs {
		c, t, p, m = append(c, r.CPU), append(t, r.Throughput), append(p, r.P95), append(m, r.Memory)
		cl, p50 = append(cl, r.Client), append(p50, r.P50)
	}
	return Measured{CPU: quantile.Median(c), Throughput: quantile.Median(t), P95: quantile.Median(p), Memory: quantile.Median(m), Client: quantile.Median(cl), P50: quantile.Median(p50)}
}

// Repeatability is the median, over rows run more than once, of the spread
// of their real p95s, (max − min) / median: how far the real side moves
// between runs of the same case, a floor under any model's error. ok is
// false when no row was repeated.
func Repeatability(rows []Row) (spread float64, ok bool) {
	var xs []float64
	for _, r := range rows {
		if len(r.Repeats) < 2 {
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, m := range r.Repeats {
			lo, hi = math.Min(lo, m.P95), math.Max(hi, m.P95)
		}
		if md := MedianOf(r.Repeats).P95; md > 0 {
			xs = append(xs, (hi-lo)/md)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	return quantile.Median(xs), true
}

// Errors are absolute percentage errors of the simulation against reality.
func (r Row) Errors() Measured {
	ape := func(sim, real float64) float64 {
		if real == 0 {
			if sim == 0 {
				return 0
			}
			return 1
		}
		return math.Abs(sim-real) / real
	}
	return Measured{
		CPU:        ape(r.Sim.CPU, r.Real.CPU),
		Throughput: ape(r.Sim.Throughput, r.Real.Throughput),
		P95:        ape(r.Sim.P95, r.Real.P95),
		Memory:     ape(r.Sim.Memory, r.Real.Memory),
	}
}

// Targets are the accepted median absolute percentage errors.
var Targets = Measured{CPU: 0.15, Throughput: 0.05, P95: 0.30, Memory: 0.20}

// Simulate runs c on the simulator with one-second steps and no
// measurement noise: one pod, warm, with c.CPU cores, c.Concurrency request
// slots and ample memory. Memory is the pod's working set (MemoryUsage per
// ready pod) averaged over the steps.
func Simulate(ctx context.Context, prof *calibration.Profile, c Case, opts ...sim.Option) (Measured, error) {
	if len(c.Rates) == 0 {
		return Measured{}, fmt.Errorf("case %s: no load", c.App)
	}
	app := sim.App{
		Name: c.App, Chain: c.Chain, Speed: 1,
		Load:        sim.Load{Shape: c.Rates, Scale: 1},
		Initial:     sim.Allocation{Replicas: 1, CPU: c.CPU, Memory: 8192 * gym.MiB},
		Concurrency: c.Concurrency,
	}
	b := gym.Bounds{MinReplicas: 1, MaxReplicas: 1, MinCPU: 0.01, MaxCPU: 64, MinMemory: gym.MiB, MaxMemory: 8192 * gym.MiB}
	opts = append([]sim.Option{sim.WithStep(time.Second), sim.WithBounds(b), sim.WithWorkers(1)}, opts...)
	cl, err := sim.New(prof, []sim.App{app}, opts...)
	if err != nil {
		return Measured{}, fmt.Errorf("case %s: %w", c.App, err)
	}
	var cpu, done, mem float64
	steps := make([]gym.Metrics, 0, len(c.Rates))
	for range c.Rates {
		cl.Set(0, app.Initial)
		if err := cl.Advance(ctx); err != nil {
			return Measured{}, err
		}
		m := cl.Metrics(0)
		cpu += m.CPUUsage
		done += m.ProcessedRate
		if m.ReadyReplicas > 0 {
			mem += m.MemoryUsage / float64(m.ReadyReplicas)
		}
		steps = append(steps, m)
	}
	n := float64(len(c.Rates))
	return Measured{CPU: cpu / n, Throughput: done / n, P95: mixtureQuantile(steps, 0.95), Memory: mem / n}, nil
}

// mixtureQuantile is the q-quantile of the latency of every request of the
// steps: each step's distribution is piecewise linear through its p50, p95
// and p99 (and 0 at zero, 1 at twice p99 − p95 beyond), weighted by the
// requests it completed.
func mixtureQuantile(steps []gym.Metrics, q float64) float64 {
	cdf := func(m gym.Metrics, x float64) float64 {
		xs := []float64{0, m.LatencyP50, m.LatencyP95, m.LatencyP99, 2*m.LatencyP99 - m.LatencyP95}
		ps := []float64{0, 0.5, 0.95, 0.99, 1}
		for i := 1; i < len(xs); i++ {
			if x < xs[i] {
				if xs[i] == xs[i-1] {
					return ps[i]
				}
				return ps[i-1] + (ps[i]-ps[i-1])*(x-xs[i-1])/(xs[i]-xs[i-1])
			}
		}
		return 1
	}
	var total, hi float64
	for _, m := range steps {
		total += m.ProcessedRate
		hi = math.Max(hi, 2*m.LatencyP99)
	}
	if total == 0 {
		return 0
	}
	lo := 0.0
	for range 60 {
		mid := (lo + hi) / 2
		var f float64
		for _, m := range steps {
			if m.ProcessedRate > 0 {
				f += m.ProcessedRate * cdf(m, mid)
			}
		}
		if f/total < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// Summary holds the median absolute percentage errors of rows.
func Summary(rows []Row) Measured {
	var c, t, p, m []float64
	for _, r := range rows {
		e := r.Errors()
		c, t, p, m = append(c, e.CPU), append(t, e.Throughput), append(p, e.P95), append(m, e.Memory)
	}
	return Measured{CPU: quantile.Median(c), Throughput: quantile.Median(t), P95: quantile.Median(p), Memory: quantile.Median(m)}
}

// WriteMarkdown prints the table, the medians and whether each meets its
// target.
func WriteMarkdown(w io.Writer, rows []Row) error {
	fmt.Fprintln(w, "| app | chain | CPU limit | concurrency | quota | trace | rate req/s | CPU real / sim (cores) | err | throughput real / sim | err | p95 real / sim (ms) | err | memory | memory real / sim (MiB) | err |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	const mib = 1 << 20
	for _, r := range rows {
		e := r.Errors()
		conc := "unbounded"
		if r.Case.Concurrency > 0 {
			conc = fmt.Sprint(r.Case.Concurrency)
		}
		fmt.Fprintf(w, "| %s | %s | %.2f | %s | %s | %s | %.1f | %.3f / %.3f | %.1f%% | %.1f / %.1f | %.1f%% | %.2f / %.2f | %.1f%% | %s | %.1f / %.1f | %.1f%% |\n",
			r.Case.App, segments.FormatChain(r.Case.Chain), r.Case.CPU, conc, r.Quota, r.Case.Trace, r.Case.MeanRate(),
			r.Real.CPU, r.Sim.CPU, 100*e.CPU, r.Real.Throughput, r.Sim.Throughput, 100*e.Throughput,
			1e3*r.Real.P95, 1e3*r.Sim.P95, 100*e.P95, r.MemorySource, r.Real.Memory/mib, r.Sim.Memory/mib, 100*e.Memory)
	}
	s := Summary(rows)
	ok := func(v, t float64) string {
		if v <= t {
			return "meets"
		}
		return "misses"
	}
	_, err := fmt.Fprintf(w, "\nMedian absolute percentage error over %d runs: CPU %.1f%% (target ≤ %.0f%%: %s), throughput %.1f%% (≤ %.0f%%: %s), p95 latency %.1f%% (≤ %.0f%%: %s), memory %.1f%% (≤ %.0f%%: %s).\n",
		len(rows), 100*s.CPU, 100*Targets.CPU, ok(s.CPU, Targets.CPU), 100*s.Throughput, 100*Targets.Throughput, ok(s.Throughput, Targets.Throughput),
		100*s.P95, 100*Targets.P95, ok(s.P95, Targets.P95), 100*s.Memory, 100*Targets.Memory, ok(s.Memory, Targets.Memory))
	if err != nil {
		return err
	}
	if spread, rep := Repeatability(rows); rep {
		n := 0
		for _, r := range rows {
			n = max(n, len(r.Repeats))
		}
		_, err = fmt.Fprintf(w, "Real runs are medians of %d repeats; the real p95's spread between repeats of a case, (max − min) / median, is %.1f%% (median over cases).\n", n, 100*spread)
		if err != nil {
			return err
		}
	}
	var client []float64
	var cpu, reqs float64
	for _, r := range rows {
		if r.Real.Client > 0 {
			client = append(client, r.Real.Client)
			cpu += r.Real.Client * r.Real.Throughput
			reqs += r.Real.Throughput
		}
	}
	if len(client) > 0 {
		_, err = fmt.Fprintf(w, "The load generator spent %.0f µs CPU per request over all cases' requests (%.0f–%.0f µs per case: it also spends a fixed 1–2 %% of a core) on the CPUs it shares with the services; the simulator charges them %.0f µs (LoadGenCPU).\n",
			1e6*cpu/reqs, 1e6*slices.Min(client), 1e6*slices.Max(client), 1e6*LoadGenCPU)
	}
	return err
}

// LoadGenCPU is the CPU-seconds per request the load generator of `aware
// sim validate` spends on the CPUs it shares with the database and the
// object store, which ServiceOptions charges the simulated services.
// Measured on this project's 2-core AMD EPYC machine, 2026-11-25 (the
// validation's "load generator" line, seed 1, 10 s windows): a fixed 14 ms
// per second plus 95 µs per request (105 µs at 1411 req/s, 129 µs at 1058).
const LoadGenCPU = 100e-6

// ServiceOptions are the simulator options that give the external services
// what a real run gives them: cores CPUs, shared with the load generator
// (LoadGenCPU per request).
func ServiceOptions(cores float64) []sim.Option {
	return []sim.Option{sim.WithServices(cores, LoadGenCPU)}
}
