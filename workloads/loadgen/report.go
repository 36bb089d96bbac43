package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// Error kinds counted in Report.Errors besides "http_<status>".
const (
	ErrTimeout    = "timeout"    // no response within the request timeout
	ErrConnection = "connection" // dial refused, reset or closed connection
	ErrCanceled   = "canceled"   // the run was cancelled while the request was in flight
	ErrOther      = "other"      // anything else
)

// Quantiles summarises a distribution of durations.
type Quantiles struct {
	P50, P95, P99, Max, Mean time.Duration
}

// MarshalJSON writes the quantiles in seconds.
func (q Quantiles) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		P50  float64 `json:"p50"`
		P95  float64 `json:"p95"`
		P99  float64 `json:"p99"`
		Max  float64 `json:"max"`
		Mean float64 `json:"mean"`
	}{q.P50.Seconds(), q.P95.Seconds(), q.P99.Seconds(), q.Max.Seconds(), q.Mean.Seconds()})
}

// Report is the outcome of one run.
type Report struct {
	Target string
	Speed  float64
	// Scheduled is the number of arrivals in the schedule.
	Scheduled int64
	// Sent requests were dispatched; Dropped ones were not, because
	// MaxOutstanding requests were already in flight.
	Sent, Dropped int64
	// Completed requests got a 2xx response; Failed ones did not.
	Completed, Failed int64
	// Errors counts failed requests by kind: "http_<status>", ErrTimeout,
	// ErrConnection, ErrCanceled, ErrOther.
	Errors map[string]int64
	// Duration is the elapsed time from the start to the later of the end of
	// the (speed-scaled) schedule and the last completion.
	Duration time.Duration
	// TargetRate is the scheduled arrivals per second of replay time.
	TargetRate float64
	// AchievedRate is Completed / Duration.
	AchievedRate float64
	// Latency of completed requests, from the intended send time to the end
	// of the response (so time spent queued in the generator counts).
	Latency Quantiles
	// Lateness of dispatch: actual send time minus intended send time.
	Lateness Quantiles
	// Interrupted is set when the run was cancelled before the schedule ended.
	Interrupted bool
}

// RateError is (AchievedRate − TargetRate) / TargetRate, or 0 without a
// target.
func (r Report) RateError() float64 {
	if r.TargetRate == 0 {
		return 0
	}
	return (r.AchievedRate - r.TargetRate) / r.TargetRate
}

// MarshalJSON writes the report with durations in seconds.
func (r Report) MarshalJSON() ([]byte, error) {
	errs := r.Errors
	if errs == nil {
		errs = map[string]int64{}
	}
	return json.Marshal(struct {
		Target          string           `json:"target"`
		Speed           float64          `json:"speed"`
		Scheduled       int64            `json:"scheduled"`
		Sent            int64            `json:"sent"`
		Completed       int64            `json:"completed"`
		Failed          int64            `json:"failed"`
		Dropped         int64            `json:"dropped"`
		Errors          map[string]int64 `json:"errors"`
		DurationSeconds float64          `json:"durationSeconds"`
		TargetRate      float64          `json:"targetRate"`
		AchievedRate    float64          `json:"achievedRate"`
		RateError       float64          `json:"rateError"`
		Latency         Quantiles        `json:"latencySeconds"`
		Lateness        Quantiles        `json:"latenessSeconds"`
		Interrupted     bool             `json:"interrupted"`
	}{r.Target, r.Speed, r.Scheduled, r.Sent, r.Completed, r.Failed, r.Dropped, errs,
		r.Duration.Seconds(), r.TargetRate, r.AchievedRate, r.RateError(), r.Latency, r.Lateness, r.Interrupted})
}

// WriteTable prints the report as an aligned two-column table.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	row("target", "%s", r.Target)
	row("speed", "%gx", r.Speed)
	row("duration", "%s", r.Duration.Round(time.Millisecond))
	row("scheduled", "%d", r.Scheduled)
	row("sent", "%d", r.Sent)
	row("completed", "%d", r.Completed)
	row("failed", "%d", r.Failed)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		row("  "+k, "%d", r.Errors[k])
	}
	row("dropped", "%d", r.Dropped)
	row("target rate", "%.1f req/s", r.TargetRate)
	row("achieved rate", "%.1f req/s (%s)", r.AchievedRate, pct(r.RateError()))
	row("latency p50/p95/p99", "%s / %s / %s", ms(r.Latency.P50), ms(r.Latency.P95), ms(r.Latency.P99))
	row("latency mean/max", "%s / %s", ms(r.Latency.Mean), ms(r.Latency.Max))
	row("lateness p50/p99/max", "%s / %s / %s", ms(r.Lateness.P50), ms(r.Lateness.P99), ms(r.Lateness.Max))
	if r.Interrupted {
		row("interrupted", "yes: the run was cancelled before the schedule ended")
	}
	return tw.Flush()
}

// ms formats d in milliseconds with three decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pct formats a fraction as a signed percentage with two decimals, without
// a negative zero.
func pct(f float64) string {
	v := math.Round(f*1e4) / 1e2
	if v == 0 {
		v = 0 // drop the sign of -0
	}
	return fmt.Sprintf("%+.2f%%", v)
}
