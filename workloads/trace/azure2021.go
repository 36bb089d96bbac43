package trace

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Invocation is one row of the Azure Functions 2021 invocation trace.
type Invocation struct {
	App, Func string
	// Arrival is when the invocation started, end_timestamp - duration,
	// measured from the trace's own origin (it can be negative for
	// invocations that started before the trace window).
	Arrival time.Duration
	// Duration is the execution time.
	Duration time.Duration
}

// maxTraceSeconds bounds timestamps so that they convert to time.Duration.
const maxTraceSeconds = 1e9

// ScanAzureFunctions2021 streams an Azure Functions 2021 invocation CSV
// (header app,func,end_timestamp,duration; end_timestamp and duration are
// seconds as decimal numbers) and calls fn once per row in file order.
func ScanAzureFunctions2021(r io.Reader, name string, fn func(Invocation) error) error {
	f, err := newCSV(r, name, func(h []string) string {
		return headerIs(h, "app", "func", "end_timestamp", "duration")
	})
	if err != nil {
		return err
	}
	for {
		rec, err := f.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		end, err := parseSeconds(f, rec, 2, false)
		if err != nil {
			return err
		}
		dur, err := parseSeconds(f, rec, 3, true)
		if err != nil {
			return err
		}
		inv := Invocation{App: rec[0], Func: rec[1], Arrival: seconds(end - dur), Duration: seconds(dur)}
		if err := fn(inv); err != nil {
			return fmt.Errorf("%s:%d: %w", name, f.line, err)
		}
	}
}

// BinAzureFunctions2021 reads an Azure Functions 2021 invocation CSV and
// counts arrivals (end_timestamp - duration) into bins of length step, the
// first bin starting at the earliest arrival (see BinArrivals).
func BinAzureFunctions2021(r io.Reader, name string, step time.Duration) (Series, error) {
	var at []time.Duration
	err := ScanAzureFunctions2021(r, name, func(inv Invocation) error {
		at = append(at, inv.Arrival)
		return nil
	})
	if err != nil {
		return Series{}, err
	}
	if len(at) == 0 {
		return Series{}, fmt.Errorf("%s: no invocation rows after the header", name)
	}
	return BinArrivals(name, at, step)
}

// parseSeconds parses field i as a finite number of seconds within
// ±maxTraceSeconds (non-negative when nonNeg).
func parseSeconds(f *csvFile, rec []string, i int, nonNeg bool) (float64, error) {
	v, err := strconv.ParseFloat(rec[i], 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, f.fieldErr(i, "%q is not a finite number of seconds", rec[i])
	case nonNeg && v < 0:
		return 0, f.fieldErr(i, "%v seconds is negative", v)
	case math.Abs(v) > maxTraceSeconds:
		return 0, f.fieldErr(i, "%v seconds is beyond ±%g", v, maxTraceSeconds)
	}
	return v, nil
}

// seconds converts seconds to a Duration, rounding to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
