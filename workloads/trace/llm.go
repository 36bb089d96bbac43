package trace

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// llmTimeLayout parses Azure LLM trace timestamps such as
// "2023-11-16 18:17:03.9799600" (the fraction is optional, any precision).
const llmTimeLayout = "2006-01-02 15:04:05.999999999"

// Request is one request of an Azure LLM inference trace.
type Request struct {
	// At is the arrival offset from the trace's first request.
	At time.Duration `json:"at"`
	// ContextTokens is the prompt size; GeneratedTokens the response size.
	ContextTokens   int `json:"contextTokens"`
	GeneratedTokens int `json:"generatedTokens"`
}

// LLMTrace is an Azure LLM inference trace: request arrivals with their
// sizes, which can drive payload-size variation as well as load.
type LLMTrace struct {
	Name string
	// Start is the first request's timestamp (the file's clock, read as UTC).
	Start time.Time
	// Requests are sorted by arrival.
	Requests []Request
}

// ReadAzureLLM reads an Azure LLM inference trace CSV with header
// TIMESTAMP,ContextTokens,GeneratedTokens. Rows may be in any order; the
// result is sorted by arrival (stable for equal timestamps).
func ReadAzureLLM(r io.Reader, name string) (LLMTrace, error) {
	f, err := newCSV(r, name, func(h []string) string {
		return headerIs(h, "TIMESTAMP", "ContextTokens", "GeneratedTokens")
	})
	if err != nil {
		return LLMTrace{}, err
	}
	type row struct {
		t    time.Time
		c, g int
	}
	var rows []row
	for {
		rec, err := f.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return LLMTrace{}, err
		}
		t, err := time.Parse(llmTimeLayout, rec[0])
		if err != nil {
			return LLMTrace{}, f.fieldErr(0, "%q is not a timestamp like 2023-11-16 18:17:03.9799600", rec[0])
		}
		c, err := parseTokens(f, rec, 1)
		if err != nil {
			return LLMTrace{}, err
		}
		g, err := parseTokens(f, rec, 2)
		if err != nil {
			return LLMTrace{}, err
		}
		rows = append(rows, row{t, c, g})
	}
	if len(rows) == 0 {
		return LLMTrace{}, fmt.Errorf("%s: no request rows after the header", name)
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.t.Compare(b.t) })
	start := rows[0].t
	if span := rows[len(rows)-1].t.Sub(start); span >= maxTraceSeconds*time.Second {
		return LLMTrace{}, fmt.Errorf("%s: requests span %v, more than the %gs a trace may cover", name, span, maxTraceSeconds)
	}
	tr := LLMTrace{Name: name, Start: start, Requests: make([]Request, len(rows))}
	for i, r := range rows {
		tr.Requests[i] = Request{At: r.t.Sub(start), ContextTokens: r.c, GeneratedTokens: r.g}
	}
	return tr, nil
}

// Series counts the trace's requests into bins of length step starting at
// the first request (see BinArrivals).
func (t LLMTrace) Series(step time.Duration) (Series, error) {
	at := make([]time.Duration, len(t.Requests))
	for i, r := range t.Requests {
		at[i] = r.At
	}
	return BinArrivals(t.Name, at, step)
}

func parseTokens(f *csvFile, rec []string, i int) (int, error) {
	v, err := strconv.Atoi(rec[i])
	if err != nil || v < 0 {
		return 0, f.fieldErr(i, "%q is not a non-negative integer token count", rec[i])
	}
	return v, nil
}
