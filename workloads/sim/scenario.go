package sim

import (
	"fmt"
	"slices"
	"sync"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Scenario is one of the instability scenarios of the paper (§2.3): a
// change of payload or load that a converged policy has not seen.
type Scenario int

const (
	// FileSizes moves file and object payloads from [128, 256, 384] kB to
	// [512, 768, 1024] kB (readFile, writeFile, object*, compress,
	// decompress).
	FileSizes Scenario = iota + 1
	// DBItems grows the database table read from 1024 to 10240 items.
	DBItems
	// FloatOps multiplies float-operation iterations by 2^8.
	FloatOps
	// ImageSize grows images from 40×40 to 160×160 (every image side ×4).
	ImageSize
	// JSONSize grows JSON documents from [250 B, 500 B, 1 kB] to [2, 3, 5] kB.
	JSONSize
	// MatrixSize grows matrices from 50 to 150 per side (×3).
	MatrixSize
	// LoadLow divides the load by 4 (high → low).
	LoadLow
	// LoadHigh multiplies the load by 4 (low → high).
	LoadHigh
)

// ScenarioSpec defines an instability scenario: what it does to an
// application's chain, its load, or both.
type ScenarioSpec struct {
	// Name is how reports and flags call it (lower-case words joined by
	// '-').
	Name string
	// Chain returns the chain under the scenario as a new slice (nil: the
	// chain is unchanged).
	Chain func(chain []segments.Spec) []segments.Spec
	// LoadFactor multiplies the load (0: unchanged).
	LoadFactor float64
}

var (
	scenarioMu sync.RWMutex
	specs      = map[Scenario]ScenarioSpec{}
	order      []Scenario
)

func init() {
	for _, b := range []struct {
		s    Scenario
		name string
		load float64
	}{{FileSizes, "file-sizes", 0}, {DBItems, "db-items", 0}, {FloatOps, "float-ops", 0}, {ImageSize, "image-size", 0},
		{JSONSize, "json-size", 0}, {MatrixSize, "matrix-size", 0}, {LoadLow, "load-low", 0.25}, {LoadHigh, "load-high", 4}} {
		spec := ScenarioSpec{Name: b.name, LoadFactor: b.load}
		if b.load == 0 {
			spec.Chain = func(chain []segments.Spec) []segments.Spec { return b.s.payload(chain) }
		}
		if got := RegisterScenario(spec); got != b.s {
			panic(fmt.Sprintf("sim: scenario %s registered as %d, want %d", b.name, got, b.s))
		}
	}
}

// RegisterScenario adds an instability scenario (docs/extending.md) and
// returns its value: Scenarios lists it after the built-in ones and
// ParseScenario reads its name. It panics on a name that is empty or
// taken, or a spec that changes neither the chain nor the load:
// programming errors, as with database/sql.Register.
func RegisterScenario(spec ScenarioSpec) Scenario {
	scenarioMu.Lock()
	defer scenarioMu.Unlock()
	if spec.Name == "" || (spec.Chain == nil && (spec.LoadFactor == 0 || spec.LoadFactor == 1)) || spec.LoadFactor < 0 {
		panic(fmt.Sprintf("sim: RegisterScenario %q: a name and a chain change or a positive load factor other than 1 are required", spec.Name))
	}
	for _, o := range specs {
		if o.Name == spec.Name {
			panic("sim: scenario " + spec.Name + " registered twice")
		}
	}
	s := Scenario(len(order) + 1)
	specs[s] = spec
	order = append(order, s)
	return s
}

// Scenarios lists every scenario in order: the paper's, then the
// registered ones.
func Scenarios() []Scenario {
	scenarioMu.RLock()
	defer scenarioMu.RUnlock()
	return slices.Clone(order)
}

func (s Scenario) spec() (ScenarioSpec, bool) {
	scenarioMu.RLock()
	defer scenarioMu.RUnlock()
	spec, ok := specs[s]
	return spec, ok
}

func (s Scenario) String() string {
	if spec, ok := s.spec(); ok {
		return spec.Name
	}
	return fmt.Sprintf("Scenario(%d)", int(s))
}

// ChangesLoad reports whether s scales the load.
func (s Scenario) ChangesLoad() bool {
	spec, _ := s.spec()
	return spec.LoadFactor != 0 && spec.LoadFactor != 1
}

// ParseScenario reads a scenario name as String prints it.
func ParseScenario(name string) (Scenario, error) {
	var names []string
	for _, s := range Scenarios() {
		if s.String() == name {
			return s, nil
		}
		names = append(names, s.String())
	}
	return 0, fmt.Errorf("unknown scenario %q (known: %v)", name, names)
}

// mapRank moves size from the small list to the large one by rank; sizes
// in neither list scale by the ratio of the lists' first elements.
func mapRank(size int, small, large []int) int {
	if i := slices.Index(small, size); i >= 0 {
		return large[i]
	}
	if slices.Contains(large, size) {
		return size
	}
	return size * large[0] / small[0]
}

// Apply returns chain with the scenario's change (a new slice; chain is
// not modified). Load scenarios leave the chain alone.
func (s Scenario) Apply(chain []segments.Spec) []segments.Spec {
	if spec, ok := s.spec(); ok && spec.Chain != nil {
		return spec.Chain(slices.Clone(chain))
	}
	return slices.Clone(chain)
}

// payload is a built-in scenario's change of payload sizes.
func (s Scenario) payload(chain []segments.Spec) []segments.Spec {
	out := slices.Clone(chain)
	kb := func(k ...int) []int {
		for i := range k {
			k[i] <<= 10
		}
		return k
	}
	for i, seg := range out {
		switch {
		case s == FileSizes && slices.Contains([]string{"readFile", "writeFile", "objectRead", "objectWrite", "objectStream", "compress", "decompress"}, seg.Name):
			out[i].Size = mapRank(seg.Size, kb(128, 256, 384), kb(512, 768, 1024))
		case s == DBItems && seg.Name == "dbRead":
			out[i].Size = mapRank(seg.Size, []int{1024}, []int{10240})
		case s == FloatOps && seg.Name == "floatOperations":
			out[i].Size = seg.Size << 8
		case s == ImageSize && slices.Contains([]string{"imageCompress", "imageResize", "imageRotate"}, seg.Name):
			out[i].Size = seg.Size * 4
		case s == JSONSize && seg.Name == "json2yaml":
			out[i].Size = mapRank(seg.Size, []int{250, 500, 1000}, []int{2000, 3000, 5000})
		case s == MatrixSize && seg.Name == "matMul":
			out[i].Size = seg.Size * 3
		}
	}
	return out
}

// Inject applies scenario s to application i from its next step on.
func (c *Cluster) Inject(i int, s Scenario) error {
	spec, ok := s.spec()
	if !ok {
		return fmt.Errorf("sim: inject: unknown scenario %d", int(s))
	}
	a := &c.apps[i]
	if s.ChangesLoad() {
		a.Load.Scale *= spec.LoadFactor
	}
	if spec.Chain == nil {
		return nil
	}
	if a.Model != nil {
		return fmt.Errorf("sim: inject %s into %s: the application has a given model and no chain to change", s, a.Name)
	}
	chain := s.Apply(a.Chain)
	m, err := NewModel(c.prof, chain, a.Speed, c.cfg.overheads)
	if err != nil {
		return fmt.Errorf("sim: inject %s into %s: %w", s, a.Name, err)
	}
	a.Chain = chain
	c.st[i].model = m
	return nil
}
