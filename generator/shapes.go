package generator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/sim"
	"github.com/aware-autoscaler/aware/workloads/trace"
	"github.com/aware-autoscaler/aware/workloads/trace/shipped"
)

// traceFiles are the shared traces behind each generator source.
var traceFiles = map[string]string{
	SourceNASA:     shipped.NASA,
	SourceTwitter:  shipped.Twitter,
	SourceAzureLLM: shipped.AzureLLM,
}

// TraceFile is the file in ../shared/traces behind a generator source ("" if
// unknown).
func TraceFile(source string) string { return traceFiles[source] }

// Shapes are load shapes by source, at one step, each with mean 1.
type Shapes struct {
	Step   time.Duration
	Shapes map[string][]float64
	// Origin says where each shape came from: "real: FILE" (the file in
	// the traces folder), "shipped: FILE" (the repository's copy),
	// "fitted to FILE" (the synthetic model fitted to it), "synthetic"
	// (the stand-in) or, from FileShapes, "file: NAME".
	Origin map[string]string
}

// TracesDir is where the real traces sit beside a checkout (the default of
// every --traces flag); a fresh clone has no such folder and gets the
// shipped and fitted shapes (LoadShapes).
const TracesDir = "../shared/traces"

// TracesHelp says what a traces folder is, for --traces flags.
const TracesHelp = "folder of the real traces; a file absent: its shipped copy (NASA, Azure LLM) or the model fitted to it (Twitter)"

// LoadShapes gives every source the first shape it finds of:
//
//  1. its trace file in dir ("real: FILE");
//  2. the repository's copy of that file, embedded in the binary
//     (workloads/trace/shipped: NASA and Azure LLM; "shipped: FILE");
//  3. the project's synthetic model fitted to that file, for a trace the
//     repository may not ship (Twitter; "fitted to FILE"), sampled over
//     the file's span with seed and the source;
//  4. the synthetic stand-in: a week of the project's diurnal, bursty
//     model, seeded by seed and the source ("synthetic").
//
// dir "" asks for the stand-ins only (step 4 for every source), for tests
// and labs whose figures must not depend on trace data.
func LoadShapes(dir string, step time.Duration, seed uint64) (Shapes, error) {
	if step < time.Second {
		return Shapes{}, fmt.Errorf("generator: step %s is below a second", step)
	}
	sh := Shapes{Step: step, Shapes: map[string][]float64{}, Origin: map[string]string{}}
	for i, src := range Sources() {
		var (
			s    trace.Series
			err  error
			file = traceFiles[src]
			// Synthetic shapes are seeded per source.
			srcSeed = seed + uint64(i)*1000003
		)
		path := filepath.Join(dir, file)
		_, statErr := os.Stat(path)
		if dir != "" && statErr != nil && !errors.Is(statErr, os.ErrNotExist) {
			return Shapes{}, fmt.Errorf("generator: source %s: %w", src, statErr)
		}
		fit, fitted := shipped.Fitted(file)
		switch {
		case dir != "" && statErr == nil:
			if s, err = trace.Load(path, trace.WithBinStep(time.Second)); err != nil {
				return Shapes{}, fmt.Errorf("generator: source %s: %w", src, err)
			}
			sh.Origin[src] = "real: " + file
		case dir != "" && shipped.Has(file):
			if s, err = shipped.Load(file, time.Second); err != nil {
				return Shapes{}, fmt.Errorf("generator: source %s: %w", src, err)
			}
			sh.Origin[src] = "shipped: " + file
		case dir != "" && fitted:
			if s, err = trace.Generate(fit.Params, step, fit.Span, srcSeed); err != nil {
				return Shapes{}, fmt.Errorf("generator: source %s: fitted to %s: %w", src, file, err)
			}
			sh.Origin[src] = "fitted to " + file
		default:
			if s, err = trace.Generate(trace.Synthetic(10), step, 7*24*time.Hour, srcSeed); err != nil {
				return Shapes{}, err
			}
			sh.Origin[src] = "synthetic"
		}
		if sh.Shapes[src], err = shapeOf(s, step); err != nil {
			return Shapes{}, fmt.Errorf("generator: source %s: %w", src, err)
		}
	}
	return sh, nil
}

// shapeOf is s at step with mean 1 per step.
func shapeOf(s trace.Series, step time.Duration) ([]float64, error) {
	var err error
	if s.Step != step {
		if s, err = trace.Resample(s, step); err != nil {
			return nil, err
		}
	}
	if s, err = trace.Normalize(s); err != nil {
		return nil, err
	}
	return slices.Clone(s.Values), nil
}

// FileShapes drives every source with one trace file in any format
// trace.Load reads (a study rerun on the user's own load): its shape at
// step, mean 1, for every source, with origin "file: NAME".
func FileShapes(path string, step time.Duration) (Shapes, error) {
	if step < time.Second {
		return Shapes{}, fmt.Errorf("generator: step %s is below a second", step)
	}
	s, err := trace.Load(path, trace.WithBinStep(time.Second))
	if err != nil {
		return Shapes{}, fmt.Errorf("generator: trace %s: %w", path, err)
	}
	shape, err := shapeOf(s, step)
	if err != nil {
		return Shapes{}, fmt.Errorf("generator: trace %s: %w", path, err)
	}
	if len(shape) < 2 {
		return Shapes{}, fmt.Errorf("generator: trace %s: %d steps of %s: too short to drive a simulation", path, len(shape), step)
	}
	sh := Shapes{Step: step, Shapes: map[string][]float64{}, Origin: map[string]string{}}
	for _, src := range Sources() {
		sh.Shapes[src], sh.Origin[src] = shape, "file: "+filepath.Base(path)
	}
	return sh, nil
}

// SimApps converts generated apps into simulator apps over shapes.
func SimApps(apps []App, sh Shapes) ([]sim.App, error) {
	out := make([]sim.App, len(apps))
	for i, a := range apps {
		shape, ok := sh.Shapes[a.Load.Source]
		if !ok {
			return nil, fmt.Errorf("generator: %s: load source %q has no shape (known: %v)", a.Name(), a.Load.Source, Sources())
		}
		slo := gym.SLO{}
		switch a.SLO.Kind {
		case LatencySLO:
			slo = gym.SLO{Kind: gym.LatencySLO, Target: a.SLO.LatencyP99}
		case ThroughputSLO:
			slo = gym.SLO{Kind: gym.ThroughputSLO, Target: a.SLO.Throughput}
		}
		out[i] = sim.App{
			Name:        a.Name(),
			Chain:       a.Spec.Segments,
			Speed:       a.Env.Speed,
			Noise:       a.Env.Noise,
			SLO:         slo,
			Load:        sim.Load{Shape: shape, Offset: int(time.Duration(a.Load.Offset) * time.Second / sh.Step), Scale: a.Load.MeanRate},
			Initial:     sim.Allocation{Replicas: a.Initial.Replicas, CPU: a.Initial.CPU, Memory: a.Initial.Memory},
			Concurrency: a.Concurrency,
		}
	}
	return out, nil
}
