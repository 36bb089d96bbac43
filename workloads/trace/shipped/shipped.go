package shipped

import (
	"embed"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/workloads/trace"
)

// The development traces' file names, as in the project's traces folder
// (../shared/traces).
const (
	// NASA is shipped: HTTP requests per second to the NASA Kennedy Space
	// Center web server, July 1995 (29 days).
	NASA = "nasa-1995-http-rps.dev.txt.gz"
	// AzureLLM is shipped: one hour of requests to an Azure LLM inference
	// service (code), November 2023.
	AzureLLM = "azure-llm-2023-code.csv.gz"
	// Twitter is not shipped (its source states no licence); Fitted holds
	// the model fitted to it.
	Twitter = "twitter-stream-rps.dev.txt.gz"
)

//go:embed nasa-1995-http-rps.dev.txt.gz azure-llm-2023-code.csv.gz
var files embed.FS

// readers read each shipped file the way trace.Load reads it from disk
// (format detection aside: each file's format is known).
var readers = map[string]func(r io.Reader, name string, binStep time.Duration) (trace.Series, error){
	NASA: func(r io.Reader, name string, _ time.Duration) (trace.Series, error) {
		return trace.ReadCounts(r, name)
	},
	AzureLLM: func(r io.Reader, name string, binStep time.Duration) (trace.Series, error) {
		t, err := trace.ReadAzureLLM(r, name)
		if err != nil {
			return trace.Series{}, err
		}
		return t.Series(binStep)
	},
}

// Files lists the shipped trace files, sorted.
func Files() []string { return slices.Sorted(maps.Keys(readers)) }

// Has reports whether the repository ships the trace file name.
func Has(name string) bool { _, ok := readers[name]; return ok }

// Load reads the shipped copy of the trace file name into the series
// trace.Load(path, trace.WithBinStep(binStep)) gives for that file on disk:
// count traces at their own step, request traces binned at binStep. It is
// an error if name is not shipped.
func Load(name string, binStep time.Duration) (trace.Series, error) {
	read, ok := readers[name]
	if !ok {
		return trace.Series{}, fmt.Errorf("shipped trace %q: not in the repository (shipped: %v)", name, Files())
	}
	f, err := files.Open(name)
	if err != nil {
		return trace.Series{}, fmt.Errorf("shipped trace %s: %w", name, err)
	}
	defer f.Close()
	return read(f, name, binStep)
}
