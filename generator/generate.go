package generator

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/app"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Range is a closed interval [Min, Max].
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Options control Generate. Start from DefaultOptions.
type Options struct {
	// Apps is the number of applications.
	Apps int `json:"apps"`
	// Seed determines everything generated.
	Seed int64 `json:"seed"`
	// MaxSegments is the longest chain; lengths are uniform in 1..MaxSegments
	// before duplicate chains are redrawn.
	MaxSegments int `json:"maxSegments"`
	// TrainFraction of the apps (rounded) form the train split.
	TrainFraction float64 `json:"trainFraction"`
	// ThroughputFraction is the probability of a throughput SLO.
	ThroughputFraction float64 `json:"throughputFraction"`
	// Slack is the range of the SLO slack factor (uniform): a latency SLO
	// is slack × the model's p99 at the reference point (ReferenceCPU cores
	// per pod at ReferenceUtil), a throughput SLO the mean rate / slack.
	Slack Range `json:"slack"`
	// ReferenceCPU and ReferenceUtil are the operating point whose p99
	// latency, in the calibrated simulator's model, a latency SLO scales.
	ReferenceCPU  float64 `json:"referenceCPU"`
	ReferenceUtil float64 `json:"referenceUtil"`
	// Demand is the range of the CPU demand at the mean rate in cores, on
	// the app's node (log-uniform).
	Demand Range `json:"demand"`
	// MaxInFlight caps the mean rate so that at most this many requests are
	// in flight on average (Little's law): chains that mostly wait (sleep,
	// I/O) use little CPU and would otherwise get huge rates.
	MaxInFlight float64 `json:"maxInFlight"`
	// MaxRate caps the mean rate in requests/s: trace peaks reach about six
	// times the mean and the load generator holds 4,000 req/s on 2 cores.
	MaxRate float64 `json:"maxRate"`
	// PowerFraction is the probability of a Power node (else x86).
	PowerFraction float64 `json:"powerFraction"`
	// Sources are the trace sources drawn from (uniform).
	Sources []string `json:"sources"`
	// Families are the application families drawn from, by weight
	// (RegisterFamily); empty: every application is Uniform, the paper's
	// pool, drawn exactly as before families existed.
	Families []FamilyWeight `json:"families,omitempty"`
}

// DefaultOptions returns the pool of the paper: 1000 apps split 800/200.
func DefaultOptions() Options {
	return Options{
		Apps:               1000,
		Seed:               1,
		MaxSegments:        4,
		TrainFraction:      0.8,
		ThroughputFraction: 0.15,
		Slack:              Range{1.25, 2.5},
		ReferenceCPU:       1,
		ReferenceUtil:      0.65,
		Demand:             Range{0.2, 6},
		MaxInFlight:        32,
		MaxRate:            500,
		PowerFraction:      0.5,
		Sources:            Sources(),
	}
}

// Validate reports every bad option, each naming its field.
func (o Options) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Apps <= 0 {
		add("apps: %d must be positive", o.Apps)
	}
	if o.MaxSegments <= 0 {
		add("maxSegments: %d must be positive", o.MaxSegments)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"trainFraction", o.TrainFraction}, {"throughputFraction", o.ThroughputFraction}, {"powerFraction", o.PowerFraction}} {
		if !(f.v >= 0 && f.v <= 1) {
			add("%s: %g is not in [0, 1]", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		r    Range
	}{{"slack", o.Slack}, {"demand", o.Demand}} {
		if !positive(f.r.Min) || !positive(f.r.Max) || f.r.Max < f.r.Min {
			add("%s: [%g, %g] is not a positive range", f.name, f.r.Min, f.r.Max)
		}
	}
	if !positive(o.ReferenceCPU) {
		add("referenceCPU: %g cores must be positive", o.ReferenceCPU)
	}
	if !(o.ReferenceUtil > 0 && o.ReferenceUtil < 1) {
		add("referenceUtil: %g is not in (0, 1)", o.ReferenceUtil)
	}
	if !positive(o.MaxInFlight) {
		add("maxInFlight: %g must be positive", o.MaxInFlight)
	}
	if !positive(o.MaxRate) {
		add("maxRate: %g must be positive", o.MaxRate)
	}
	if len(o.Sources) == 0 {
		add("sources: empty (known: %v)", Sources())
	}
	for i, s := range o.Sources {
		if _, ok := sourceSpans[s]; !ok {
			add("sources[%d]: unknown source %q (known: %v)", i, s, Sources())
		}
	}
	for i, f := range o.Families {
		if _, ok := findFamily(f.Name); !ok {
			add("families[%d]: unknown family %q (known: %v)", i, f.Name, Families())
		}
		if !positive(f.Weight) {
			add("families[%d]: weight %g must be positive", i, f.Weight)
		}
	}
	return errors.Join(errs...)
}

// Constants of the generated apps.
const (
	// MinLatencySLO is the smallest p99 bound: below it the HTTP round trip
	// and the metrics' resolution (histogram buckets from 1 ms) dominate.
	MinLatencySLO = 0.005
	// requestCPU and requestTime are the per-request HTTP costs that
	// calibration (in process) does not see (sim.DefaultOverheads).
	requestCPU  = 90e-6
	requestTime = 150e-6
	// maxDraws bounds the redraws of a chain that duplicates an earlier app's.
	maxDraws = 1000
	// splitStream is the PCG stream of the train/test shuffle.
	splitStream = 0x5b11_7e57
)

// Generate returns opts.Apps applications, deterministic in opts. App i
// (1-based) uses its own random source seeded by (Seed, i) and only redraws
// its chain when it repeats an earlier app's, so a pool's first n apps are
// the same whatever opts.Apps is. The split is a seeded shuffle of the
// whole pool: exactly round(TrainFraction × Apps) apps are "train".
func Generate(opts Options, prof *calibration.Profile) ([]App, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("generator options: %w", err)
	}
	if prof == nil {
		return nil, errors.New("generator: calibration profile is nil")
	}
	pool := calibratedPool(prof)
	if len(pool) == 0 {
		return nil, errors.New("generator: the calibration profile has no entry of a known segment at one of its sizes")
	}
	// What a family draws from: segment → calibrated sizes.
	var calibrated map[string][]int
	if len(opts.Families) > 0 {
		calibrated = make(map[string][]int, len(pool))
		for _, p := range pool {
			calibrated[p.name] = p.sizes
		}
	}
	seen := make(map[string]bool, opts.Apps)
	apps := make([]App, opts.Apps)
	for i := range apps {
		r := rand.New(rand.NewPCG(uint64(opts.Seed), splitmix(uint64(i+1))))
		a, err := generateApp(r, i+1, opts, pool, calibrated, prof, seen)
		if err != nil {
			return nil, err
		}
		apps[i] = a
	}
	nTrain := int(math.Round(opts.TrainFraction * float64(opts.Apps)))
	perm := rand.New(rand.NewPCG(uint64(opts.Seed), splitStream)).Perm(opts.Apps)
	for k, i := range perm {
		if k < nTrain {
			apps[i].Split = SplitTrain
		} else {
			apps[i].Split = SplitTest
		}
	}
	return apps, nil
}

// AppName is the name of the i-th app (1-based): app-0001, app-0002, ...
func AppName(i int) string { return fmt.Sprintf("app-%04d", i) }

// poolSegment is a segment with its calibrated sizes.
type poolSegment struct {
	name  string
	sizes []int
}

// calibratedPool lists the segments with the sizes of segments.Info.Sizes
// that the profile has entries for.
func calibratedPool(prof *calibration.Profile) []poolSegment {
	var pool []poolSegment
	for _, name := range segments.Names() {
		info, _ := segments.Lookup(name)
		var sizes []int
		for _, s := range info.Sizes {
			if _, ok := prof.Lookup(name, s); ok {
				sizes = append(sizes, s)
			}
		}
		if len(sizes) > 0 {
			pool = append(pool, poolSegment{name, sizes})
		}
	}
	return pool
}

func generateApp(r *rand.Rand, i int, opts Options, pool []poolSegment, calibrated map[string][]int, prof *calibration.Profile, seen map[string]bool) (App, error) {
	name := AppName(i)
	family, where := "", name // where names the app, and its family in errors
	draw := func() ([]segments.Spec, error) { return drawChain(r, opts.MaxSegments, pool), nil }
	if len(opts.Families) > 0 {
		family = pickFamily(r, opts.Families)
		where = fmt.Sprintf("%s: family %s", name, family)
		f, _ := findFamily(family)
		draw = func() ([]segments.Spec, error) {
			chain, err := f.Chain(r, opts.MaxSegments, calibrated)
			if err == nil && len(chain) == 0 {
				err = fmt.Errorf("an empty chain")
			}
			if err != nil {
				return nil, fmt.Errorf("generator: %s: %w", where, err)
			}
			return chain, nil
		}
	}
	var chain []segments.Spec
	for n := 0; ; n++ {
		switch {
		case n == maxDraws && family != "":
			return App{}, fmt.Errorf("generator: %s: family %s drew no chain unlike the earlier apps' in %d draws: it has too few chains for its share of the pool; widen it or lower its weight", name, family, maxDraws)
		case n == maxDraws:
			return App{}, fmt.Errorf("generator: %s: no chain of 1..%d segments unlike the earlier apps' in %d draws; raise maxSegments or lower apps", name, opts.MaxSegments, maxDraws)
		}
		var err error
		if chain, err = draw(); err != nil {
			return App{}, err
		}
		if k := chainKey(chain); !seen[k] {
			seen[k] = true
			break
		}
	}
	cost, err := chainCost(prof, chain)
	if err != nil {
		return App{}, fmt.Errorf("generator: %s: %w", where, err)
	}

	var env Environment
	if r.Float64() < opts.PowerFraction {
		env = Environment{NodeClass: NodePower, Speed: round(uniform(r, 0.7, 0.9), 3), Noise: round(uniform(r, 0.05, 0.1), 3)}
	} else {
		env = Environment{NodeClass: NodeX86, Speed: round(uniform(r, 0.9, 1.1), 3), Noise: round(uniform(r, 0.02, 0.05), 3)}
	}

	throughput := r.Float64() < opts.ThroughputFraction
	slack := round(uniform(r, opts.Slack.Min, opts.Slack.Max), 2)

	source := opts.Sources[r.IntN(len(opts.Sources))]
	load := Load{Source: source, Seed: r.Int64N(1 << 53), Offset: r.IntN(sourceSpans[source])}
	demand := math.Exp(uniform(r, math.Log(opts.Demand.Min), math.Log(opts.Demand.Max)))
	rate := demand / cost.cpuAt(env.Speed)
	rate = math.Min(rate, math.Min(opts.MaxInFlight/cost.wallAt(env.Speed), opts.MaxRate))
	load.MeanRate = roundSig(rate, 4)

	bounds := gym.DefaultBounds()
	concurrency := Concurrency(cost.wallAt(env.Speed), cost.cpuAt(env.Speed), bounds.MaxCPU)
	m, err := sim.NewModel(prof, chain, env.Speed, sim.DefaultOverheads())
	if err != nil {
		return App{}, fmt.Errorf("generator: %s: %w", name, err)
	}

	slo := SLO{Kind: LatencySLO, Slack: slack}
	if throughput {
		slo.Kind, slo.Throughput = ThroughputSLO, roundSig(load.MeanRate/slack, 4)
	} else {
		ref, err := ReferenceP99(m, concurrency, opts.ReferenceCPU, opts.ReferenceUtil)
		if err != nil {
			return App{}, fmt.Errorf("generator: %s: %w", name, err)
		}
		slo.Reference = round(ref, 6)
		slo.LatencyP99 = round(math.Max(slack*ref, MinLatencySLO), 4)
	}

	minCPU := bounds.MinCPU
	if slo.Kind == LatencySLO {
		minCPU = MinCPU(m, concurrency, slo.LatencyP99, opts.ReferenceUtil, bounds)
	}
	initial := Resources{
		Replicas: 1 + r.IntN(2),
		CPU:      float64(4+r.IntN(5)) * 0.128, // 512m..1024m in steps of the artifact's action
	}
	initial.CPU = math.Max(initial.CPU, minCPU)
	// Memory: the working set with every slot running plus a quarter, in
	// whole action steps, as an operator sizes a new service from a load
	// test; requests queued beyond the slots hold little.
	step := float64(gym.MemoryStep)
	full := m.WorkingSet(float64(concurrency), concurrency)
	initial.Memory = math.Min(math.Max(bounds.MinMemory, math.Ceil(1.25*full/step)*step), bounds.MaxMemory)

	profile := v1alpha1.DefaultAgentProfile()
	profile.SLO = slo.ProfileSLO()
	return App{
		Spec:        app.Spec{APIVersion: app.SpecVersion, Kind: "App", Name: name, Seed: r.Int64N(1 << 53), Segments: chain},
		SLO:         slo,
		Load:        load,
		Env:         env,
		Initial:     initial,
		Concurrency: concurrency,
		MinCPU:      minCPU,
		Profile:     profile,
		Family:      family,
	}, nil
}

// ReferenceP99 is the p99 latency, in seconds, of an application of model
// m (sim.NewModel of its chain on its node, with the default HTTP
// overheads) in the simulator's stationary model over 30 s steps
// (sim.SteadyState): one pod of cpu cores whose server runs concurrency
// requests at once, loaded to util of what it can complete.
func ReferenceP99(m sim.Model, concurrency int, cpu, util float64) (float64, error) {
	st := sim.SteadyState(m, sim.Allocation{Replicas: 1, CPU: cpu, Memory: math.Inf(1)}, util*m.Capacity(cpu, concurrency), concurrency, referenceStep)
	if !st.Stable() {
		return 0, fmt.Errorf("the reference point (%g cores at %g of capacity) is unstable", cpu, util)
	}
	return st.LatencyP99, nil
}

// MinCPU is the smallest CPU limit from b.MinCPU in steps of gym.CPUStep
// (b.MaxCPU at most) at which one pod of model m meets the latency bound
// slo at utilisation util (ReferenceP99): below it CFS throttling alone
// breaks the SLO, whatever the replica count.
func MinCPU(m sim.Model, concurrency int, slo, util float64, b gym.Bounds) float64 {
	for k := 0; ; k++ {
		cpu := round(b.MinCPU+float64(k)*gym.CPUStep, 3)
		if cpu >= b.MaxCPU {
			return b.MaxCPU
		}
		if p99, err := ReferenceP99(m, concurrency, cpu, util); err == nil && p99 <= slo {
			return cpu
		}
	}
}

// referenceStep is the simulator's default step in seconds.
const referenceStep = 30

// MinConcurrency is the fewest requests a workload server runs at once.
const MinConcurrency = 4

// Concurrency sizes a pod's request slots as an operator sizes a worker
// pool by Little's law: a pod at the largest CPU limit maxCPU, busy, holds
// maxCPU·wall/cpu requests at once for requests of wall seconds needing
// cpu CPU-seconds; twice that leaves room for bursts, and at least
// MinConcurrency.
func Concurrency(wall, cpu, maxCPU float64) int {
	if !(cpu > 0) || !(wall > 0) {
		return MinConcurrency
	}
	return max(MinConcurrency, int(math.Ceil(2*maxCPU*math.Max(wall, cpu)/cpu)))
}

func drawChain(r *rand.Rand, maxSegments int, pool []poolSegment) []segments.Spec {
	chain := make([]segments.Spec, 1+r.IntN(maxSegments))
	for k := range chain {
		p := pool[r.IntN(len(pool))]
		chain[k] = segments.Spec{Name: p.name, Size: p.sizes[r.IntN(len(p.sizes))]}
	}
	return chain
}

func chainKey(chain []segments.Spec) string {
	parts := make([]string, len(chain))
	for i, s := range chain {
		parts[i] = s.Name + ":" + strconv.Itoa(s.Size)
	}
	return strings.Join(parts, ",")
}

// cost is the calibrated per-request cost of a chain on the calibration
// machine.
type cost struct {
	cpu, wall  float64 // CPU and wall-clock seconds (mean), with HTTP overhead
	cpuWall    float64 // wall-clock seconds spent on a CPU
	perRequest float64 // bytes held per in-flight request
	io         float64 // bytes read and written per request
}

func chainCost(prof *calibration.Profile, chain []segments.Spec) (cost, error) {
	c := cost{cpu: requestCPU, wall: requestCPU + requestTime, cpuWall: requestCPU}
	for i, s := range chain {
		e, ok := prof.Lookup(s.Name, s.Size)
		if !ok {
			return cost{}, fmt.Errorf("segments[%d]: %s at size %d is not in the calibration profile", i, s.Name, s.Size)
		}
		share := math.Min(e.CPUSeconds/e.ServiceMean, 1)
		c.cpu += e.CPUSeconds
		c.wall += e.ServiceMean
		c.cpuWall += share * e.ServiceMean
		c.perRequest += float64(e.WorkingSet) / float64(max(e.Concurrency, 1))
		c.io += e.ReadBytes + e.WriteBytes
	}
	return c, nil
}

// cpuAt and wallAt are the costs on a node of the given speed: the
// CPU parts scale with 1/speed, waiting does not.
func (c cost) cpuAt(speed float64) float64  { return c.cpu / speed }
func (c cost) wallAt(speed float64) float64 { return c.wall + c.cpuWall*(1/speed-1) }

func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

func round(x float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(x*p) / p
}

// roundSig rounds x to n significant digits.
func roundSig(x float64, n int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', n, 64), 64)
	return v
}

// splitmix scrambles an index into a well-mixed PCG stream selector.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// sortedCounts turns a histogram into name-sorted counts.
func sortedCounts(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, n := range m {
		out = append(out, Count{Name: k, N: n})
	}
	slices.SortFunc(out, func(a, b Count) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// GenerateSelected generates the default pool (DefaultOptions) of seed
// poolSeed and returns Select(pool, n, selectSeed): the apps a testbed of
// n apps runs, the same in the Pulumi program and in the local twin.
func GenerateSelected(prof *calibration.Profile, poolSeed int64, n int, selectSeed uint64) ([]App, error) {
	opts := DefaultOptions()
	opts.Seed = poolSeed
	pool, err := Generate(opts, prof)
	if err != nil {
		return nil, fmt.Errorf("generator: the pool of seed %d: %w", poolSeed, err)
	}
	return Select(pool, n, selectSeed), nil
}

// Select returns n apps of pool: the first n when seed is 0 (what the
// simulator, the twin and the benchmarks take), otherwise n chosen at
// random by seed, in the pool's order. All of the pool when n ≥ its size.
func Select(pool []App, n int, seed uint64) []App {
	if n >= len(pool) {
		return slices.Clone(pool)
	}
	if seed == 0 {
		return slices.Clone(pool[:max(n, 0)])
	}
	idx := rand.New(rand.NewPCG(seed, 0x7e57bed)).Perm(len(pool))[:n]
	slices.Sort(idx)
	out := make([]App, n)
	for i, j := range idx {
		out[i] = pool[j]
	}
	return out
}
