package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Files is how the trace commands read files: a format name (ParseFormat;
// "" detects it from the content) and the bin length for traces of
// individual requests (Azure Functions 2021, Azure LLM).
type Files struct {
	Format  string
	BinStep time.Duration
}

// Load reads one trace file.
func (f Files) Load(path string) (Series, error) {
	opts := []LoadOption{WithBinStep(f.BinStep)}
	if f.Format != "" {
		format, err := ParseFormat(f.Format)
		if err != nil {
			return Series{}, err
		}
		opts = append(opts, WithFormat(format))
	}
	return Load(path, opts...)
}

// WriteStats writes the statistics of each trace file as one table
// (`aware trace stats`).
func WriteStats(w io.Writer, f Files, paths ...string) error {
	stats := make([]Stats, 0, len(paths))
	for _, path := range paths {
		s, err := f.Load(path)
		if err != nil {
			return err
		}
		stats = append(stats, Describe(s))
	}
	return WriteStatsTable(w, stats...)
}

// WriteFit fits the synthetic model to the trace file, generates a
// synthetic trace of the same step and span with seed, and writes both
// traces' statistics side by side and then the fitted parameters as JSON
// (`aware trace fit`).
func WriteFit(w io.Writer, f Files, path string, seed uint64) error {
	observed, err := f.Load(path)
	if err != nil {
		return err
	}
	p, err := Fit(observed)
	if err != nil {
		return err
	}
	syn, err := Generate(p, observed.Step, observed.Span(), seed)
	if err != nil {
		return err
	}
	if err := WriteStatsTable(w, Describe(observed), Describe(syn)); err != nil {
		return err
	}
	js, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\nfitted parameters:\n%s\n", js)
	return err
}
