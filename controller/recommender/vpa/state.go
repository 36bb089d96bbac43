package vpa

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aware-autoscaler/aware/controller/recommender"
)

// State is everything a VPA has learnt, for a checkpoint: its decaying CPU
// and memory histograms, the sample history behind its confidence, the
// memory aggregation interval in progress, what it knows of the pods and
// its last recommendation. Upstream keeps the histograms in a
// VerticalPodAutoscalerCheckpoint with weights rounded to integers; State
// keeps them exactly, so a VPA restored from it recommends what the one it
// was taken from would have. Times count from the VPA's first call, in its
// steps (Calls × Step).
type State struct {
	Step  time.Duration `json:"step"`
	Calls int64         `json:"calls"`

	CPU    HistogramState `json:"cpu"`
	Memory HistogramState `json:"memory"`

	FirstSample time.Duration `json:"firstSample"`
	LastSample  time.Duration `json:"lastSample"`
	// Samples counts CPU samples at upstream's one per pod per minute.
	Samples float64 `json:"samples"`
	// Window is the memory aggregation interval in progress.
	Window WindowState `json:"window"`

	Previous recommender.Allocation `json:"previous"`
	PodStart time.Duration          `json:"podStart"`
	LastOOM  time.Duration          `json:"lastOOM"`
	QuickOOM bool                   `json:"quickOOM,omitempty"`

	// Recommendation is the last estimate; nil before the first.
	Recommendation *RecommendationState `json:"recommendation,omitempty"`
}

// HistogramState is a decaying histogram: the layout it was built with
// (checked on restore), its reference time, every bucket's weight, the
// total and the first and last bucket not empty.
type HistogramState struct {
	FirstBucket float64       `json:"firstBucket"`
	HalfLife    time.Duration `json:"halfLife"`
	Reference   time.Duration `json:"reference"`
	Weights     []float64     `json:"weights"`
	Total       float64       `json:"total"`
	Min         int           `json:"min"`
	Max         int           `json:"max"`
}

// WindowState is the memory aggregation interval in progress: its end, the
// peak and OOM figures and pod counts so far, and the two samples it holds
// in the memory histogram.
type WindowState struct {
	Started bool          `json:"started,omitempty"`
	End     time.Duration `json:"end"`
	Peak    float64       `json:"peak"`
	OOM     float64       `json:"oom"`
	Pods    int           `json:"pods"`
	Killed  int           `json:"killed"`
	// In holds [value, weight] of the peak and OOM samples in the histogram.
	In [2][2]float64 `json:"in"`
}

// RecommendationState is the last estimate in integer millicores and
// bytes, as upstream's ResourceAmount, and when it was made.
type RecommendationState struct {
	EstimatedAt time.Duration `json:"estimatedAt"`
	// Target, Lower, Upper and Uncapped are [millicores, bytes].
	Target   [2]int64 `json:"target"`
	Lower    [2]int64 `json:"lower"`
	Upper    [2]int64 `json:"upper"`
	Uncapped [2]int64 `json:"uncapped"`
}

// Calls returns how many steps v has observed (those of the state it was
// restored from included).
func (v *VPA) Calls() int64 { return v.n }

// State returns a copy of what v has learnt.
func (v *VPA) State() State {
	w := v.win
	s := State{
		Step: v.step, Calls: v.n,
		CPU: v.cpu.state(), Memory: v.mem.state(),
		FirstSample: v.firstSample, LastSample: v.lastSample, Samples: v.samples,
		Window: WindowState{Started: w.started, End: w.end, Peak: w.peak, OOM: w.oom, Pods: w.pods, Killed: w.killed,
			In: [2][2]float64{{w.in[0].v, w.in[0].w}, {w.in[1].v, w.in[1].w}}},
		Previous: v.prev, PodStart: v.podStart, LastOOM: v.lastOOM, QuickOOM: v.quickOOM,
	}
	if v.hasRec {
		pair := func(a amounts) [2]int64 { return [2]int64{a.cpu, a.mem} }
		s.Recommendation = &RecommendationState{EstimatedAt: v.estAt, Target: pair(v.target), Lower: pair(v.lower), Upper: pair(v.upper), Uncapped: pair(v.unc)}
	}
	return s
}

// Restore replaces what v has learnt with s, taken from a VPA of the same
// step and histogram layout (its other options, such as percentiles and
// bounds, may differ: the next estimate uses v's). It refuses a state that
// does not fit v or is not one a VPA can be in, naming the field, and then
// leaves v as it was.
func (v *VPA) Restore(s State) error {
	if err := v.checkState(s); err != nil {
		return fmt.Errorf("vpa: restore: %w", err)
	}
	v.n = s.Calls
	v.now = time.Duration(s.Calls) * v.step
	v.cpu.restore(s.CPU)
	v.mem.restore(s.Memory)
	v.firstSample, v.lastSample, v.samples = s.FirstSample, s.LastSample, s.Samples
	w := s.Window
	v.win = memWindow{started: w.Started, end: w.End, peak: w.Peak, oom: w.OOM, pods: w.Pods, killed: w.Killed,
		in: [2]sample{{w.In[0][0], w.In[0][1]}, {w.In[1][0], w.In[1][1]}}}
	v.prev, v.podStart, v.lastOOM, v.quickOOM = s.Previous, s.PodStart, s.LastOOM, s.QuickOOM
	v.hasRec = s.Recommendation != nil
	if r := s.Recommendation; r != nil {
		pair := func(p [2]int64) amounts { return amounts{p[0], p[1]} }
		v.estAt, v.target, v.lower, v.upper, v.unc = r.EstimatedAt, pair(r.Target), pair(r.Lower), pair(r.Upper), pair(r.Uncapped)
	} else {
		v.estAt, v.target, v.lower, v.upper, v.unc = 0, amounts{}, amounts{}, amounts{}, amounts{}
	}
	return nil
}

func (v *VPA) checkState(s State) error {
	if s.Step != v.step {
		return fmt.Errorf("step %v, this VPA's is %v", s.Step, v.step)
	}
	if s.Calls < 0 || s.Calls > math.MaxInt64/int64(s.Step)-1 {
		return fmt.Errorf("calls %d outside [0, %d] (calls × step is a time)", s.Calls, math.MaxInt64/int64(s.Step)-1)
	}
	now := time.Duration(s.Calls) * s.Step
	var errs []error
	errs = append(errs, v.cpu.checkState("cpu", s.CPU), v.mem.checkState("memory", s.Memory))
	for _, t := range []struct {
		name string
		at   time.Duration
	}{{"firstSample", s.FirstSample}, {"lastSample", s.LastSample}, {"podStart", s.PodStart}, {"lastOOM", s.LastOOM}} {
		if t.at < 0 || t.at > now {
			errs = append(errs, fmt.Errorf("%s %v outside [0, %v] (calls × step)", t.name, t.at, now))
		}
	}
	if s.FirstSample > s.LastSample {
		errs = append(errs, fmt.Errorf("firstSample %v is after lastSample %v", s.FirstSample, s.LastSample))
	}
	if !finiteNonNeg(s.Samples) {
		errs = append(errs, fmt.Errorf("samples %v must be finite and not negative", s.Samples))
	}
	w := s.Window
	if !finiteNonNeg(w.Peak) || !finiteNonNeg(w.OOM) || w.Pods < 0 || w.Killed < 0 || w.End < 0 {
		errs = append(errs, fmt.Errorf("window %+v: end, peak, oom, pods and killed must be finite and not negative", w))
	}
	for i, in := range w.In {
		if !finiteNonNeg(in[0]) || !finiteNonNeg(in[1]) {
			errs = append(errs, fmt.Errorf("window.in[%d] %v must be finite and not negative", i, in))
		}
	}
	a := s.Previous
	if a.Replicas < 0 || !finiteNonNeg(a.CPU) || !finiteNonNeg(a.Memory) {
		errs = append(errs, fmt.Errorf("previous allocation %v must be finite and not negative", a))
	}
	if r := s.Recommendation; r != nil {
		if r.EstimatedAt < 0 || r.EstimatedAt > now {
			errs = append(errs, fmt.Errorf("recommendation.estimatedAt %v outside [0, %v]", r.EstimatedAt, now))
		}
		for _, p := range []struct {
			name string
			v    [2]int64
		}{{"target", r.Target}, {"lower", r.Lower}, {"upper", r.Upper}, {"uncapped", r.Uncapped}} {
			if p.v[0] < 0 || p.v[1] < 0 || p.v[0] > maxAmount || p.v[1] > maxAmount {
				errs = append(errs, fmt.Errorf("recommendation.%s %v outside [0, %g]", p.name, p.v, float64(maxAmount)))
			}
		}
	}
	return errors.Join(errs...)
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

func (h *histogram) state() HistogramState {
	return HistogramState{FirstBucket: h.first, HalfLife: h.halfLife, Reference: h.ref,
		Weights: append([]float64(nil), h.weight...), Total: h.total, Min: h.minB, Max: h.maxB}
}

func (h *histogram) checkState(name string, s HistogramState) error {
	if s.FirstBucket != h.first || s.HalfLife != h.halfLife || len(s.Weights) != len(h.weight) {
		return fmt.Errorf("%s histogram of %d buckets from %g with half-life %v, this VPA's has %d from %g with %v",
			name, len(s.Weights), s.FirstBucket, s.HalfLife, len(h.weight), h.first, h.halfLife)
	}
	var errs []error
	for i, w := range s.Weights {
		if !finiteNonNeg(w) {
			errs = append(errs, fmt.Errorf("%s histogram: weight of bucket %d is %v, want finite and not negative", name, i, w))
		}
	}
	if !finiteNonNeg(s.Total) {
		errs = append(errs, fmt.Errorf("%s histogram: total weight %v, want finite and not negative", name, s.Total))
	}
	if s.Reference%h.halfLife != 0 {
		errs = append(errs, fmt.Errorf("%s histogram: reference %v is not a multiple of the half-life %v", name, s.Reference, h.halfLife))
	}
	if n := len(h.weight); s.Min < 0 || s.Min >= n || s.Max < 0 || s.Max >= n {
		errs = append(errs, fmt.Errorf("%s histogram: first and last buckets %d, %d outside [0, %d)", name, s.Min, s.Max, n))
	} else if s.Min > s.Max && (s.Min != n-1 || s.Max != 0) {
		errs = append(errs, fmt.Errorf("%s histogram: first bucket %d after last %d (an empty histogram has %d, 0)", name, s.Min, s.Max, n-1))
	}
	return errors.Join(errs...)
}

func (h *histogram) restore(s HistogramState) {
	copy(h.weight, s.Weights)
	h.ref, h.total, h.minB, h.maxB = s.Reference, s.Total, s.Min, s.Max
}
