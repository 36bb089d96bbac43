package generator

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/workloads/app"
)

// App is one generated application with everything an experiment needs.
type App struct {
	// Spec is the workload: name "app-0001"..., seed and segment chain.
	Spec  app.Spec    `json:"spec"`
	SLO   SLO         `json:"slo"`
	Load  Load        `json:"load"`
	Env   Environment `json:"env"`
	Split string      `json:"split"`
	// Family is the application's family when the pool was drawn from
	// families (Options.Families), empty for the paper's uniform pool.
	Family  string    `json:"family,omitempty"`
	Initial Resources `json:"initial"`
	// Concurrency is how many requests a pod's workload server runs at
	// once (its --concurrency); further requests wait in its queue.
	Concurrency int `json:"concurrency"`
	// MinCPU is the MPA's minAllowed CPU in cores: the smallest pod, in
	// whole action steps, that meets a latency SLO at the reference
	// utilisation, so that no autoscaler shrinks the pod into CFS
	// throttling that no replica count can undo (the bounds' minimum for
	// throughput SLOs).
	MinCPU float64 `json:"minCPU"`
	// Profile is the agent profile of the app; its SLO equals SLO.
	Profile v1alpha1.AgentProfile `json:"profile"`
	// Tuning says how Profile.Targets.CPU, the HPA+VPA baseline's CPU
	// target, was searched on the simulator (nil: the default target).
	Tuning *Tuning `json:"tuning,omitempty"`
}

// Tuning records the search of an app's HPA CPU target: the highest
// candidate at which the HPA+VPA baseline met the SLO over a calibration
// window of the app's load just before its evaluation starts.
type Tuning struct {
	// Window is the calibration window's length, e.g. "24h0m0s".
	Window string `json:"window"`
	// Violations is the fraction of the window's counted steps that
	// violated the SLO at the chosen target.
	Violations float64 `json:"violations"`
	// Met reports whether the target met the SLO (at most MaxViolations);
	// when no candidate did, the target is the one with the fewest.
	Met           bool    `json:"met"`
	MaxViolations float64 `json:"maxViolations"`
}

// Name is the application's name.
func (a App) Name() string { return a.Spec.Name }

// SLO kinds.
const (
	LatencySLO    = "latency"
	ThroughputSLO = "throughput"
)

// SLO is an application's service-level objective.
type SLO struct {
	// Kind is LatencySLO or ThroughputSLO.
	Kind string `json:"kind"`
	// LatencyP99 is the p99 latency bound in seconds (latency SLOs).
	LatencyP99 float64 `json:"latencyP99Seconds,omitempty"`
	// Throughput is the completed-rate bound in requests/s (throughput SLOs).
	Throughput float64 `json:"throughputRPS,omitempty"`
	// Slack is the factor applied to the reference p99 (latency) or divided
	// into the mean rate (throughput): smaller is tighter.
	Slack float64 `json:"slack"`
	// Reference is the calibrated model's p99 in seconds at the reference
	// point (latency SLOs; see Options.ReferenceCPU).
	Reference float64 `json:"referenceP99Seconds,omitempty"`
}

// ProfileSLO is the SLO as an agent profile states it.
func (s SLO) ProfileSLO() v1alpha1.ProfileSLO {
	return v1alpha1.ProfileSLO{LatencyP99Seconds: s.LatencyP99, ThroughputRPS: s.Throughput}
}

// Trace sources (shapes of the real traces in ../shared/traces).
const (
	SourceNASA     = "nasa"
	SourceTwitter  = "twitter"
	SourceAzureLLM = "azure-llm"
)

// sourceSpans are the sources' lengths in seconds: NASA 1995 29 days,
// Twitter 11 days, Azure LLM code 1 hour (looped by the consumer).
var sourceSpans = map[string]int{
	SourceNASA:     29 * 86400,
	SourceTwitter:  11 * 86400,
	SourceAzureLLM: 3600,
}

// Sources returns the known trace sources, sorted.
func Sources() []string {
	out := make([]string, 0, len(sourceSpans))
	for s := range sourceSpans {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// SourceSpan is the length of a source series in seconds.
func SourceSpan(source string) (int, bool) {
	s, ok := sourceSpans[source]
	return s, ok
}

// Load is an application's request load: a trace shape normalised to mean
// one, entered at Offset and scaled to MeanRate.
type Load struct {
	// Source is the trace shape: "nasa", "twitter" or "azure-llm".
	Source string `json:"source"`
	// Seed drives the synthetic stand-in of the source and arrival sampling.
	Seed int64 `json:"seed"`
	// Offset is the number of seconds into the source where the app starts.
	Offset int `json:"offset"`
	// MeanRate is the base load level in requests/s.
	MeanRate float64 `json:"meanRate"`
}

// Node classes.
const (
	NodeX86   = "x86"
	NodePower = "power"
)

// Environment is the node class an application runs on.
type Environment struct {
	// NodeClass is NodeX86 or NodePower.
	NodeClass string `json:"nodeClass"`
	// Speed is the CPU speed relative to the calibration machine.
	Speed float64 `json:"speed"`
	// Noise is the relative measurement-noise level.
	Noise float64 `json:"noise"`
}

// Resources is an allocation: replicas, CPU cores and memory bytes per pod.
type Resources struct {
	Replicas int     `json:"replicas"`
	CPU      float64 `json:"cpu"`
	Memory   float64 `json:"memory"`
}

// Splits.
const (
	SplitTrain = "train"
	SplitTest  = "test"
)

// Validate reports every problem of a, each naming its field.
func (a App) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := a.Spec.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("spec: %w", err))
	}
	switch a.SLO.Kind {
	case LatencySLO:
		if !positive(a.SLO.LatencyP99) || a.SLO.Throughput != 0 {
			add("slo: a latency SLO needs a positive latencyP99Seconds (got %g) and no throughputRPS (got %g)", a.SLO.LatencyP99, a.SLO.Throughput)
		}
	case ThroughputSLO:
		if !positive(a.SLO.Throughput) || a.SLO.LatencyP99 != 0 {
			add("slo: a throughput SLO needs a positive throughputRPS (got %g) and no latencyP99Seconds (got %g)", a.SLO.Throughput, a.SLO.LatencyP99)
		}
	default:
		add("slo.kind: %q is not %q or %q", a.SLO.Kind, LatencySLO, ThroughputSLO)
	}
	if !(a.SLO.Slack >= 0) || math.IsInf(a.SLO.Slack, 0) {
		add("slo.slack: %g must be a non-negative number", a.SLO.Slack)
	}
	if span, ok := sourceSpans[a.Load.Source]; !ok {
		add("load.source: %q is not one of %v", a.Load.Source, Sources())
	} else if a.Load.Offset < 0 || a.Load.Offset >= span {
		add("load.offset: %d is outside the %s span [0, %d) seconds", a.Load.Offset, a.Load.Source, span)
	}
	if !positive(a.Load.MeanRate) {
		add("load.meanRate: %g must be positive", a.Load.MeanRate)
	}
	if a.Env.NodeClass != NodeX86 && a.Env.NodeClass != NodePower {
		add("env.nodeClass: %q is not %q or %q", a.Env.NodeClass, NodeX86, NodePower)
	}
	if !positive(a.Env.Speed) {
		add("env.speed: %g must be positive", a.Env.Speed)
	}
	if !(a.Env.Noise >= 0 && a.Env.Noise <= 1) {
		add("env.noise: %g is not in [0, 1]", a.Env.Noise)
	}
	if a.Split != SplitTrain && a.Split != SplitTest {
		add("split: %q is not %q or %q", a.Split, SplitTrain, SplitTest)
	}
	if a.Concurrency < 1 {
		add("concurrency: %d must be at least 1", a.Concurrency)
	}
	if a.Initial.Replicas < 1 {
		add("initial.replicas: %d must be at least 1", a.Initial.Replicas)
	}
	if !positive(a.Initial.CPU) {
		add("initial.cpu: %g cores must be positive", a.Initial.CPU)
	}
	if !positive(a.MinCPU) || a.MinCPU > a.Initial.CPU {
		add("minCPU: %g cores must be positive and at most initial.cpu %g", a.MinCPU, a.Initial.CPU)
	}
	if !positive(a.Initial.Memory) {
		add("initial.memory: %g bytes must be positive", a.Initial.Memory)
	}
	if err := a.Profile.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("profile: %w", err))
	}
	if a.Profile.SLO != a.SLO.ProfileSLO() {
		add("profile.slo: %+v differs from slo %+v", a.Profile.SLO, a.SLO.ProfileSLO())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("app %q: %w", a.Spec.Name, err)
	}
	return nil
}

func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
