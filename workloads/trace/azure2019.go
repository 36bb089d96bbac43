package trace

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// azure2019Keys are the first columns of an Azure Functions 2019 invocation
// count file (invocations_per_function_md.anon.dNN.csv); minute columns
// "1".."1440" follow.
var azure2019Keys = []string{"HashOwner", "HashApp", "HashFunction", "Trigger"}

// FunctionSeries is one row of an Azure Functions 2019 invocation count file:
// a function's invocations per minute over one day.
type FunctionSeries struct {
	Owner, App, Function, Trigger string
	// Series has a one-minute step.
	Series Series
}

// ScanAzureFunctions2019 streams an Azure Functions 2019 per-minute
// invocation count CSV (header HashOwner,HashApp,HashFunction,Trigger,1,...,N
// with N minute columns numbered from 1, 1440 in the published files) and
// calls fn once per function row, in file order. It stops at the first error
// from the file or from fn. Rows are validated: every row has as many fields
// as the header and every minute field is a non-negative integer.
func ScanAzureFunctions2019(r io.Reader, name string, fn func(FunctionSeries) error) error {
	f, err := newCSV(r, name, checkAzure2019Header)
	if err != nil {
		return err
	}
	keys := len(azure2019Keys)
	for {
		rec, err := f.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		fs := FunctionSeries{
			Owner: rec[0], App: rec[1], Function: rec[2], Trigger: rec[3],
			Series: Series{Name: name + ":" + rec[2], Step: time.Minute, Values: make([]float64, len(rec)-keys)},
		}
		for i, field := range rec[keys:] {
			v, ok := parseCount([]byte(field))
			if !ok {
				return f.fieldErr(keys+i, "%q is not a non-negative integer", field)
			}
			fs.Series.Values[i] = v
		}
		if err := fn(fs); err != nil {
			return fmt.Errorf("%s:%d: %w", name, f.line, err)
		}
	}
}

// ReadAzureFunctions2019 reads every row of an Azure Functions 2019 count
// file (see ScanAzureFunctions2019). A published day file holds tens of
// thousands of functions; use AggregateAzureFunctions2019 to sum while
// streaming instead of holding them all.
func ReadAzureFunctions2019(r io.Reader, name string) ([]FunctionSeries, error) {
	var out []FunctionSeries
	err := ScanAzureFunctions2019(r, name, func(fs FunctionSeries) error {
		out = append(out, fs)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no function rows after the header", name)
	}
	return out, nil
}

// GroupBy selects how Azure Functions 2019 rows are summed.
type GroupBy int

const (
	// ByAll sums every function into one series, keyed "".
	ByAll GroupBy = iota
	// ByOwner sums per owner, keyed by HashOwner.
	ByOwner
	// ByApp sums per application, keyed "HashOwner/HashApp".
	ByApp
	// ByTrigger sums per trigger type (http, timer, queue, ...).
	ByTrigger
)

// Key returns the group fs belongs to.
func (g GroupBy) Key(fs FunctionSeries) string {
	switch g {
	case ByOwner:
		return fs.Owner
	case ByApp:
		return fs.Owner + "/" + fs.App
	case ByTrigger:
		return fs.Trigger
	default:
		return ""
	}
}

// AggregateAzureFunctions2019 streams an Azure Functions 2019 count file and
// returns the per-minute sum of each group's functions.
func AggregateAzureFunctions2019(r io.Reader, name string, by GroupBy) (map[string]Series, error) {
	out := map[string]Series{}
	err := ScanAzureFunctions2019(r, name, func(fs FunctionSeries) error {
		k := by.Key(fs)
		sum, ok := out[k]
		if !ok {
			label := name
			if k != "" {
				label += ":" + k
			}
			out[k] = Series{Name: label, Step: fs.Series.Step, Values: fs.Series.Values}
			return nil
		}
		for i, v := range fs.Series.Values {
			sum.Values[i] += v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no function rows after the header", name)
	}
	return out, nil
}

func checkAzure2019Header(h []string) string {
	keys := len(azure2019Keys)
	if len(h) <= keys {
		return fmt.Sprintf("%d columns, want %v followed by minute columns 1..1440", len(h), azure2019Keys)
	}
	if msg := headerIs(h[:keys], azure2019Keys...); msg != "" {
		return msg
	}
	for i, col := range h[keys:] {
		if col != strconv.Itoa(i+1) {
			return fmt.Sprintf("column %d is %q, want minute %d", keys+i+1, col, i+1)
		}
	}
	return ""
}
