package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"
)

// BenchConfig describes a benchmark: flat load at each of several rates.
type BenchConfig struct {
	// Rates are the target rates in requests per second, in order.
	Rates []float64
	// Duration is the replay time per rate.
	Duration time.Duration
	// Warmup is an unreported run at the first rate (0: none).
	Warmup time.Duration
	// Pause is the idle time between rates.
	Pause time.Duration
	// Poisson selects Poisson arrivals (seeded by Seed) instead of evenly
	// spaced ones.
	Poisson bool
	Seed    uint64
	// Options configure the generator (timeouts, max outstanding, ...).
	Options []Option
	// AfterRate, if set, is called after each rate; an error stops the
	// benchmark (e.g. when the server under test has died).
	AfterRate func(BenchRow) error
}

// Bench warms up, then replays a flat schedule at each rate against target.
// On error it returns the rows completed so far with the error.
func Bench(ctx context.Context, target string, cfg BenchConfig) ([]BenchRow, error) {
	if len(cfg.Rates) == 0 {
		return nil, errors.New("bench: at least one rate is required")
	}
	g, err := New(target, cfg.Options...)
	if err != nil {
		return nil, err
	}
	schedule := func(rate float64, d time.Duration) (Schedule, error) {
		if cfg.Poisson {
			return Poisson(rate, d, cfg.Seed)
		}
		return Constant(rate, d)
	}
	if cfg.Warmup > 0 {
		s, err := schedule(cfg.Rates[0], cfg.Warmup)
		if err != nil {
			return nil, fmt.Errorf("bench warm-up: %w", err)
		}
		if _, err := g.Run(ctx, s); err != nil {
			return nil, fmt.Errorf("bench warm-up: %w", err)
		}
	}
	var rows []BenchRow
	for i, rate := range cfg.Rates {
		if i > 0 && cfg.Pause > 0 {
			t := time.NewTimer(cfg.Pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return rows, ctx.Err()
			case <-t.C:
			}
		}
		s, err := schedule(rate, cfg.Duration)
		if err != nil {
			return rows, fmt.Errorf("bench rate %g: %w", rate, err)
		}
		rep, err := g.Run(ctx, s)
		if err != nil {
			return rows, fmt.Errorf("bench rate %g: %w", rate, err)
		}
		row := BenchRow{Rate: rate, Report: rep}
		rows = append(rows, row)
		if cfg.AfterRate != nil {
			if err := cfg.AfterRate(row); err != nil {
				return rows, err
			}
		}
	}
	return rows, nil
}

// BenchRow is the outcome of replaying one target rate in a benchmark.
type BenchRow struct {
	// Rate is the nominal target rate in requests per second.
	Rate   float64 `json:"rate"`
	Report Report  `json:"report"`
}

// Pass reports whether the achieved rate is within tolerance (a fraction,
// e.g. 0.02) of the scheduled rate.
func (r BenchRow) Pass(tolerance float64) bool {
	return r.Report.TargetRate > 0 && math.Abs(r.Report.RateError()) <= tolerance
}

// WriteBenchTable prints one aligned line per rate: target and achieved
// rates, the relative error, latency and dispatch-lateness percentiles,
// drops, errors, and PASS or FAIL for the tolerance.
func WriteBenchTable(w io.Writer, rows []BenchRow, tolerance float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "target req/s\tachieved req/s\terror\tp50 ms\tp95 ms\tp99 ms\tlate p99 ms\tdropped\terrors\twithin %g%%\t\n", 100*tolerance)
	for _, r := range rows {
		rep := r.Report
		result := "FAIL"
		if r.Pass(tolerance) {
			result = "PASS"
		}
		fmt.Fprintf(tw, "%.0f\t%.1f\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%d\t%s\t\n",
			r.Rate, rep.AchievedRate, pct(rep.RateError()),
			msf(rep.Latency.P50), msf(rep.Latency.P95), msf(rep.Latency.P99), msf(rep.Lateness.P99),
			rep.Dropped, rep.Failed, result)
	}
	return tw.Flush()
}

// WriteBenchJSON writes the rows as a JSON array.
func WriteBenchJSON(w io.Writer, rows []BenchRow, tolerance float64) error {
	type row struct {
		BenchRow
		Pass bool `json:"pass"`
	}
	out := make([]row, len(rows))
	for i, r := range rows {
		out[i] = row{r, r.Pass(tolerance)}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
