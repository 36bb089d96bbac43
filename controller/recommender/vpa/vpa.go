package vpa

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aware-autoscaler/aware/controller/recommender"
)

// Upstream defaults (model/aggregations_config.go, logic/recommender.go,
// updater/priority).
const (
	DefaultLowerPercentile           = 0.5
	DefaultTargetPercentile          = 0.9
	DefaultUpperPercentile           = 0.95
	DefaultSafetyMargin              = 0.15
	DefaultMinCPU                    = 0.025             // cores per pod
	DefaultMinMemory                 = 250 * 1024 * 1024 // bytes per pod
	DefaultHalfLife                  = 24 * time.Hour
	DefaultMemoryAggregationInterval = 24 * time.Hour
	DefaultOOMBumpUpRatio            = 1.2
	DefaultOOMMinBumpUp              = 100 * 1024 * 1024 // bytes
	DefaultUpdateThreshold           = 0.1
	DefaultPodLifetimeThreshold      = 12 * time.Hour
	DefaultEvictAfterOOM             = 10 * time.Minute
	DefaultCPUFirstBucket            = 0.01 // cores
	DefaultRecommenderInterval       = time.Minute

	bucketGrowth    = 0.05
	maxCPU          = 1000.0 // cores, histogram range
	firstMemBucket  = 1e7    // bytes
	maxMemory       = 1e12   // bytes
	minSampleWeight = 0.1
	epsilon         = 0.001 * minSampleWeight
	// maxAmount is model.MaxResourceAmount (millicores or bytes).
	maxAmount = 1e14
	// Confidence multipliers of the bounds: bound * (1 + multiplier/confidence)^exponent.
	lowerMultiplier, lowerExponent = 0.001, -2.0
	upperMultiplier, upperExponent = 1.0, 1.0
)

// Resource is a set of resources the VPA controls.
type Resource uint8

// Resources (spec.resourcePolicy.containerPolicies[].controlledResources).
const (
	CPU    Resource = 1 << iota
	Memory Resource = 1 << iota
)

// Amounts is a CPU (cores) and memory (bytes) pair.
type Amounts struct {
	CPU, Memory float64
}

// Recommendation is the VPA status recommendation of the workload's container.
type Recommendation struct {
	Target, LowerBound, UpperBound Amounts // capped to the bounds
	UncappedTarget                 Amounts
}

type config struct {
	lowerP, targetP, upperP  float64
	margin                   float64
	minCPU, minMemory        float64
	cpuHalfLife, memHalfLife time.Duration
	memInterval              time.Duration
	oomRatio, oomMin         float64
	updateThreshold          float64
	podLifetime              time.Duration
	evictAfterOOM            time.Duration
	controlled               Resource
	cpuFirstBucket           float64
	interval                 time.Duration
}

// Option configures a VPA.
type Option func(*config)

// WithPercentiles sets the usage percentiles of the lower bound, target and
// upper bound (0.5, 0.9, 0.95 upstream).
func WithPercentiles(lower, target, upper float64) Option {
	return func(c *config) { c.lowerP, c.targetP, c.upperP = lower, target, upper }
}

// WithSafetyMargin sets the fraction added to every estimate
// (--recommendation-margin-fraction).
func WithSafetyMargin(f float64) Option { return func(c *config) { c.margin = f } }

// WithMinResources sets the per-pod floor of every estimate in cores and bytes
// (--pod-recommendation-min-cpu-millicores, --pod-recommendation-min-memory-mb).
func WithMinResources(cpu, memory float64) Option {
	return func(c *config) { c.minCPU, c.minMemory = cpu, memory }
}

// WithHalfLife sets the decay half-life of both histograms.
func WithHalfLife(d time.Duration) Option {
	return func(c *config) { c.cpuHalfLife, c.memHalfLife = d, d }
}

// WithMemoryAggregationInterval sets the interval with one memory peak per pod.
func WithMemoryAggregationInterval(d time.Duration) Option {
	return func(c *config) { c.memInterval = d }
}

// WithOOMBumpUp sets the memory assumed needed after an OOM kill:
// max(used*ratio, used+minBytes).
func WithOOMBumpUp(ratio, minBytes float64) Option {
	return func(c *config) { c.oomRatio, c.oomMin = ratio, minBytes }
}

// PodFloor scales upstream's pod-level memory knobs to the floor of bounds
// b: the per-pod minimum recommendation becomes b's minAllowed (upstream
// --pod-recommendation-min-cpu-millicores and -memory-mb, 25m and 250 MiB),
// and the smallest OOM bump keeps upstream's proportion to it
// (--oom-min-bump-up-bytes, 100 MiB of 250 MiB: 0.4 of the floor).
// Upstream's defaults are sized for pods of hundreds of MiB; on a 32 MiB
// pod a 100 MiB bump quadruples the pod after one OOM kill.
func PodFloor(b recommender.Bounds) []Option {
	return []Option{
		WithMinResources(b.MinCPU, b.MinMemory),
		WithOOMBumpUp(DefaultOOMBumpUpRatio, DefaultOOMMinBumpUp/DefaultMinMemory*b.MinMemory),
	}
}

// WithUpdateThreshold sets the relative change needed to update pods whose
// request is within the bounds (--pod-update-threshold).
func WithUpdateThreshold(f float64) Option { return func(c *config) { c.updateThreshold = f } }

// WithPodLifetimeThreshold sets how old pods must be before an in-bounds
// update (--in-recommendation-bounds-eviction-lifetime-threshold).
func WithPodLifetimeThreshold(d time.Duration) Option {
	return func(c *config) { c.podLifetime = d }
}

// WithEvictAfterOOM sets the run time under which an OOM kill is "quick"
// (--evict-after-oom-threshold).
func WithEvictAfterOOM(d time.Duration) Option { return func(c *config) { c.evictAfterOOM = d } }

// WithControlledResources sets which resources Recommend changes (both by default).
func WithControlledResources(r Resource) Option { return func(c *config) { c.controlled = r } }

// WithCPUFirstBucket sets the size of the first CPU histogram bucket in
// cores (0.01 upstream; newer releases use 0.001).
func WithCPUFirstBucket(cores float64) Option { return func(c *config) { c.cpuFirstBucket = cores } }

// WithRecommenderInterval sets how often the recommendation is recomputed
// (--recommender-interval, 1 min): samples are taken at every step, and the
// target and bounds are estimated at the first sample and then at the first
// step at least d after the last estimate. 0 estimates at every step.
// Between estimates the updater rule acts on the last recommendation, as
// upstream's updater acts on the one in the VPA's status.
func WithRecommenderInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

func (c config) validate() error {
	var errs []error
	if !(0 < c.lowerP && c.lowerP <= c.targetP && c.targetP <= c.upperP && c.upperP <= 1) {
		errs = append(errs, fmt.Errorf("percentiles lower %g, target %g, upper %g must satisfy 0 < lower <= target <= upper <= 1", c.lowerP, c.targetP, c.upperP))
	}
	if !(c.margin >= 0 && c.margin <= 10) {
		errs = append(errs, fmt.Errorf("safety margin %g must be in [0, 10]", c.margin))
	}
	if !(c.minCPU >= 0 && c.minMemory >= 0) || math.IsInf(c.minCPU, 0) || math.IsInf(c.minMemory, 0) {
		errs = append(errs, fmt.Errorf("minimum resources cpu %g cores, memory %g bytes must be finite and non-negative", c.minCPU, c.minMemory))
	}
	if c.cpuHalfLife <= 0 || c.memHalfLife <= 0 {
		errs = append(errs, fmt.Errorf("histogram half-life %v must be positive", c.cpuHalfLife))
	}
	if c.memInterval <= 0 {
		errs = append(errs, fmt.Errorf("memory aggregation interval %v must be positive", c.memInterval))
	}
	if !(c.oomRatio >= 1) || !(c.oomMin >= 0) {
		errs = append(errs, fmt.Errorf("OOM bump-up ratio %g must be >= 1 and minimum %g bytes >= 0", c.oomRatio, c.oomMin))
	}
	if !(c.updateThreshold >= 0) || c.podLifetime < 0 || c.evictAfterOOM < 0 {
		errs = append(errs, fmt.Errorf("update threshold %g, pod lifetime %v and evict-after-OOM %v must be non-negative", c.updateThreshold, c.podLifetime, c.evictAfterOOM))
	}
	if c.controlled == 0 || c.controlled&^(CPU|Memory) != 0 {
		errs = append(errs, fmt.Errorf("controlled resources %#x must be a non-empty set of CPU and Memory", uint8(c.controlled)))
	}
	if !(c.cpuFirstBucket > 0 && c.cpuFirstBucket < 1) {
		errs = append(errs, fmt.Errorf("CPU first bucket %g cores must be in (0, 1)", c.cpuFirstBucket))
	}
	if c.interval < 0 {
		errs = append(errs, fmt.Errorf("recommender interval %v must be non-negative", c.interval))
	}
	return errors.Join(errs...)
}

// memWindow is the current memory aggregation interval of the workload's
// (alike) pods: peak is the usage peak, oom the OOM-derived peak; pods is the
// most pods seen in the interval, killed how many were OOM-killed. The
// histogram holds (peak, pods-killed) and (max(oom, peak), killed), all
// stamped at the end of the interval; they change as the interval goes on.
type memWindow struct {
	started      bool
	end          time.Duration
	peak, oom    float64
	pods, killed int
	in           [2]sample // what the histogram holds for this interval
}

type sample struct{ v, w float64 }

// amounts are integer millicores and bytes, as upstream model.ResourceAmount.
type amounts struct{ cpu, mem int64 }

// VPA is the upstream vertical pod autoscaler for one workload.
type VPA struct {
	c    config
	step time.Duration
	cpu  *histogram
	mem  *histogram
	n    int64 // calls so far

	// AggregateContainerState: CPU sample times and count, the count in
	// upstream's one sample per pod per minute.
	firstSample, lastSample time.Duration
	samples                 float64
	win                     memWindow

	// What the updater sees of the pods.
	prev                  recommender.Allocation
	podStart, lastOOM     time.Duration
	quickOOM              bool
	now                   time.Duration
	minAmt, lowAmt, hiAmt amounts // policy minimum per pod and bounds' min/maxAllowed

	hasRec                    bool
	estAt                     time.Duration // when the recommendation was estimated
	target, lower, upper, unc amounts
}

// New returns a VPA for bounds b, called every step.
func New(b recommender.Bounds, step time.Duration, opts ...Option) (*VPA, error) {
	c := config{
		lowerP: DefaultLowerPercentile, targetP: DefaultTargetPercentile, upperP: DefaultUpperPercentile,
		margin: DefaultSafetyMargin, minCPU: DefaultMinCPU, minMemory: DefaultMinMemory,
		cpuHalfLife: DefaultHalfLife, memHalfLife: DefaultHalfLife, memInterval: DefaultMemoryAggregationInterval,
		oomRatio: DefaultOOMBumpUpRatio, oomMin: DefaultOOMMinBumpUp,
		updateThreshold: DefaultUpdateThreshold, podLifetime: DefaultPodLifetimeThreshold, evictAfterOOM: DefaultEvictAfterOOM,
		controlled: CPU | Memory, cpuFirstBucket: DefaultCPUFirstBucket,
		interval: DefaultRecommenderInterval,
	}
	for _, o := range opts {
		o(&c)
	}
	if err := errors.Join(b.Validate(), recommender.ValidateStep(step), c.validate()); err != nil {
		return nil, fmt.Errorf("vpa: %w", err)
	}
	return &VPA{
		c: c, step: step,
		cpu:    newHistogram(maxCPU, c.cpuFirstBucket, 1+bucketGrowth, epsilon, c.cpuHalfLife),
		mem:    newHistogram(maxMemory, firstMemBucket, 1+bucketGrowth, epsilon, c.memHalfLife),
		minAmt: amounts{cpuAmount(c.minCPU), memAmount(c.minMemory)},
		lowAmt: amounts{cpuAmount(b.MinCPU), memAmount(b.MinMemory)},
		hiAmt:  amounts{cpuAmount(b.MaxCPU), memAmount(b.MaxMemory)},
	}, nil
}

// Name implements recommender.Recommender.
func (v *VPA) Name() string { return "vpa" }

// Recommend implements recommender.Recommender: Observe, then Apply to the
// controlled resources.
func (v *VPA) Recommend(obs recommender.Observation) recommender.Allocation {
	v.Observe(obs)
	return v.Apply(obs.Current, v.c.controlled)
}

// Recommendation returns the latest recommendation; false before the first
// CPU sample.
func (v *VPA) Recommendation() (Recommendation, bool) {
	if !v.hasRec {
		return Recommendation{}, false
	}
	return Recommendation{
		Target: v.target.floats(), LowerBound: v.lower.floats(), UpperBound: v.upper.floats(),
		UncappedTarget: v.unc.floats(),
	}, true
}

// Observe feeds one step's samples and updates the recommendation when the
// recommender interval has passed since it was last estimated.
func (v *VPA) Observe(obs recommender.Observation) {
	start := time.Duration(v.n) * v.step // the step's start: upstream MeasureStart
	v.n++
	v.now = time.Duration(v.n) * v.step

	cur := obs.Current
	if v.n == 1 || cur.CPU != v.prev.CPU || cur.Memory != v.prev.Memory {
		// New resources mean new pods (or restarted containers).
		v.podStart, v.lastOOM, v.quickOOM = start, start, false
	}
	v.prev = cur

	if obs.ReadyReplicas > 0 && obs.CPUUsage >= 0 {
		v.addCPU(obs, start)
	}
	if obs.MemoryPeak > 0 {
		v.addMemory(start, float64(memAmount(obs.MemoryPeak)), max(obs.ReadyReplicas, 1))
	}
	if obs.OOMKills > 0 {
		v.recordOOM(start, float64(memAmount(cur.Memory)), obs.OOMKills, max(cur.Replicas, 1))
		// The killed container ran since its pod started or its last restart
		// (updater: a quick OOM is one within evict-after-oom-threshold).
		v.quickOOM = v.now-v.lastOOM < v.c.evictAfterOOM
		v.lastOOM = v.now
	}
	if v.samples > 0 && (!v.hasRec || v.now-v.estAt >= v.c.interval) {
		v.estimate()
		v.estAt = v.now
	}
}

// addCPU mirrors AggregateContainerState.addCPUSample for every ready pod:
// the per-pod usage weighted by max(request, minSampleWeight).
func (v *VPA) addCPU(obs recommender.Observation, start time.Duration) {
	usage := float64(cpuAmount(obs.CPUUsage/float64(obs.ReadyReplicas))) / 1000
	request := float64(cpuAmount(obs.Current.CPU)) / 1000
	v.cpu.add(usage, max(request, minSampleWeight)*float64(obs.ReadyReplicas), start)
	if v.samples == 0 {
		v.firstSample = start
	}
	v.lastSample = start
	v.samples += float64(obs.ReadyReplicas) * v.step.Minutes()
}

// addMemory mirrors ContainerState.addMemorySample (not OOM) for pods alike pods.
func (v *VPA) addMemory(t time.Duration, peak float64, pods int) {
	w := &v.win
	v.advanceWindow(t)
	w.peak = max(w.peak, peak)
	w.pods = max(w.pods, pods)
	v.syncWindow()
}

// recordOOM mirrors ContainerState.RecordOOM for killed pods: the memory
// needed is max(used*ratio, used+min) with used = max(request, usage peak).
// A pod killed again in the interval keeps its one OOM peak.
func (v *VPA) recordOOM(t time.Duration, request float64, killed, replicas int) {
	w := &v.win
	used := max(request, w.peak) // before the window moves, as upstream
	needed := max(used+float64(memAmount(v.c.oomMin)), float64(memAmount(used*v.c.oomRatio)))
	v.advanceWindow(t)
	if needed > max(w.peak, w.oom) {
		w.oom = needed
	}
	w.killed += killed
	w.pods = max(w.pods, min(w.killed, replicas))
	v.syncWindow()
}

// advanceWindow starts the first interval at t or, once t reaches the end of
// the current one, moves to the interval holding t (the old peaks stay in the
// histogram).
func (v *VPA) advanceWindow(t time.Duration) {
	w := &v.win
	if !w.started {
		w.started, w.end = true, t
	}
	if t < w.end {
		return
	}
	shift := (t-w.end)/v.c.memInterval*v.c.memInterval + v.c.memInterval
	*w = memWindow{started: true, end: w.end + shift}
}

// syncWindow replaces this interval's samples in the histogram when they changed.
func (v *VPA) syncWindow() {
	w := &v.win
	killed := min(w.killed, w.pods)
	want := [2]sample{{w.peak, float64(w.pods - killed)}, {max(w.oom, w.peak), float64(killed)}}
	for i := range want {
		if want[i] == w.in[i] {
			continue
		}
		if old := w.in[i]; old.w > 0 {
			v.mem.subtract(old.v, old.w, w.end)
		}
		if want[i].w > 0 && want[i].v > 0 {
			v.mem.add(want[i].v, want[i].w, w.end)
		} else {
			want[i] = sample{}
		}
		w.in[i] = want[i]
	}
}

// confidence mirrors logic.getConfidence: history length in days, at most
// the sample count over one sample per minute. Samples are counted at the
// upstream recommender's rate of one per pod per minute, whatever the step.
func (v *VPA) confidence() float64 {
	days := float64(v.lastSample-v.firstSample) / float64(24*time.Hour)
	return math.Min(days, v.samples/(60*24))
}

// estimate mirrors CreatePodResourceRecommender: percentile, margin,
// confidence multiplier (bounds), per-pod minimum, then the policy caps.
func (v *VPA) estimate() {
	ps := [3]float64{v.c.lowerP, v.c.targetP, v.c.upperP}
	pc, pm := v.cpu.percentiles(ps), v.mem.percentiles(ps)
	var est [3]amounts
	for i := range est {
		est[i] = amounts{cpuAmount(pc[i]), memAmount(pm[i])}
		est[i] = amounts{est[i].cpu + scale(est[i].cpu, v.c.margin), est[i].mem + scale(est[i].mem, v.c.margin)}
	}
	conf := v.confidence()
	lowF := math.Pow(1+lowerMultiplier/conf, lowerExponent)
	upF := math.Pow(1+upperMultiplier/conf, upperExponent)
	est[0] = amounts{scale(est[0].cpu, lowF), scale(est[0].mem, lowF)}
	est[2] = amounts{scale(est[2].cpu, upF), scale(est[2].mem, upF)}
	for i := range est {
		est[i] = amounts{max(est[i].cpu, v.minAmt.cpu), max(est[i].mem, v.minAmt.mem)}
	}
	v.unc = est[1]
	v.lower, v.target, v.upper = v.capped(est[0]), v.capped(est[1]), v.capped(est[2])
	v.hasRec = true
}

func (v *VPA) capped(a amounts) amounts {
	return amounts{min(max(a.cpu, v.lowAmt.cpu), v.hiAmt.cpu), min(max(a.mem, v.lowAmt.mem), v.hiAmt.mem)}
}

// Apply is the updater's decision for pods running cur, restricted to the
// resources in which: the controlled resources of cur move to the target if
// any request is outside [lowerBound, upperBound], after a quick OOM if
// anything changes, or when the pods are at least the lifetime threshold old
// and the summed relative change reaches the update threshold. Otherwise it
// returns cur.
func (v *VPA) Apply(cur recommender.Allocation, which Resource) recommender.Allocation {
	if !v.hasRec || which&(CPU|Memory) == 0 {
		return cur
	}
	req := amounts{cpuAmount(cur.CPU), memAmount(cur.Memory)}
	outside, diff := false, 0.0
	check := func(req, lo, hi, target int64) {
		outside = outside || req < lo || req > hi
		diff += math.Abs(float64(req-target)) / math.Max(float64(req), 1)
	}
	if which&CPU != 0 {
		check(req.cpu, v.lower.cpu, v.upper.cpu, v.target.cpu)
	}
	if which&Memory != 0 {
		check(req.mem, v.lower.mem, v.upper.mem, v.target.mem)
	}
	if !outside && !v.quickOOM && (v.now-v.podStart < v.c.podLifetime || diff < v.c.updateThreshold) {
		return cur
	}
	if diff == 0 {
		return cur
	}
	t := v.target.floats()
	if which&CPU != 0 {
		cur.CPU = t.CPU
	}
	if which&Memory != 0 {
		cur.Memory = t.Memory
	}
	return cur
}

func (a amounts) floats() Amounts { return Amounts{CPU: float64(a.cpu) / 1000, Memory: float64(a.mem)} }

// resourceAmount mirrors model.resourceAmountFromFloat: truncated, in [0, 1e14].
func resourceAmount(x float64) int64 {
	switch {
	case x > maxAmount:
		return maxAmount
	case x >= 0:
		return int64(x)
	}
	return 0 // negative or NaN
}

func cpuAmount(cores float64) int64  { return resourceAmount(cores * 1000) }
func memAmount(bytes float64) int64  { return resourceAmount(bytes) }
func scale(a int64, f float64) int64 { return resourceAmount(float64(a) * f) }

var _ recommender.Recommender = (*VPA)(nil)
