package validation

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
	"github.com/aware-autoscaler/aware/workloads/trace"
)

// Source is a per-second load shape.
type Source struct {
	Name   string
	Series trace.Series // one-second steps
}

// sources are the generator's trace sources in the order cases rotate
// through them.
var sources = []string{generator.SourceTwitter, generator.SourceNASA, generator.SourceAzureLLM}

// LoadSources reads the real traces in dir at one-second steps. A missing
// dir is not an error: it returns no sources, and the caller falls back to
// synthetic ones.
func LoadSources(dir string) ([]Source, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var out []Source
	for _, src := range sources {
		f := generator.TraceFile(src)
		p := filepath.Join(dir, f)
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		s, err := trace.Load(p, trace.WithBinStep(time.Second))
		if err != nil {
			return nil, err
		}
		if s.Step != time.Second {
			if s, err = trace.Resample(s, time.Second); err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
		}
		out = append(out, Source{Name: f, Series: s})
	}
	return out, nil
}

// SyntheticSource is a day of the project's synthetic diurnal, bursty load
// shape, for machines without the real traces.
func SyntheticSource(seed uint64) (Source, error) {
	s, err := trace.Generate(trace.Synthetic(10), time.Second, 24*time.Hour, seed)
	if err != nil {
		return Source{}, err
	}
	return Source{Name: "synthetic", Series: s}, nil
}

// Pick is an application to validate.
type Pick struct {
	Name  string
	Chain []segments.Spec
	// Concurrency is the server's request slots (generator.App.Concurrency;
	// 0 is unbounded).
	Concurrency int
}

// Plan says which allocations and loads to run.
type Plan struct {
	// CPUs are the CPU limits to run each application at, with the
	// utilisation to load each one to (same length).
	CPUs, Utilisations []float64
	// Window is the length of each replayed load window.
	Window time.Duration
	// MaxRate caps the mean rate (the load generator shares the machine).
	MaxRate float64
	Seed    uint64
}

// Cases builds one case per application and CPU limit: a window of a
// source (rotating through sources), normalised to mean 1 and scaled so
// the simulator's model would see the planned utilisation.
func Cases(prof *calibration.Profile, picks []Pick, sources []Source, p Plan) ([]Case, error) {
	if len(sources) == 0 {
		return nil, errors.New("cases: no load sources")
	}
	if len(p.CPUs) == 0 || len(p.CPUs) != len(p.Utilisations) {
		return nil, fmt.Errorf("cases: %d CPU limits and %d utilisations", len(p.CPUs), len(p.Utilisations))
	}
	n := int(p.Window / time.Second)
	if n < 1 {
		return nil, fmt.Errorf("cases: window %s is shorter than a second", p.Window)
	}
	r := rand.New(rand.NewPCG(p.Seed, 17))
	var out []Case
	for i, pk := range picks {
		m, err := sim.NewModel(prof, pk.Chain, 1, sim.DefaultOverheads())
		if err != nil {
			return nil, fmt.Errorf("cases: %s: %w", pk.Name, err)
		}
		for j, cpu := range p.CPUs {
			src := sources[(i*len(p.CPUs)+j)%len(sources)]
			rate := math.Max(1, math.Min(p.MaxRate, p.Utilisations[j]*cpu/m.CPU))
			w, err := window(src.Series, n, r)
			if err != nil {
				return nil, fmt.Errorf("cases: %s: %w", src.Name, err)
			}
			for k := range w {
				w[k] *= rate
			}
			out = append(out, Case{App: pk.Name, Chain: pk.Chain, CPU: cpu, Rates: w, Trace: src.Name, Concurrency: pk.Concurrency})
		}
	}
	return out, nil
}

// window picks a random n-second window with some load and returns it
// normalised to mean 1.
func window(s trace.Series, n int, r *rand.Rand) ([]float64, error) {
	if s.Len() < n {
		return nil, fmt.Errorf("%d s long, shorter than the %d s window", s.Len(), n)
	}
	for range 1000 {
		off := r.IntN(s.Len() - n + 1)
		w := make([]float64, n)
		var sum float64
		busy := 0
		for k := range w {
			w[k] = s.Values[off+k]
			sum += w[k]
			if w[k] > 0 {
				busy++
			}
		}
		if busy >= n/2 {
			for k := range w {
				w[k] *= float64(n) / sum
			}
			return w, nil
		}
	}
	return nil, errors.New("no window with load in half its seconds")
}
