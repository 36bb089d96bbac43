package sim

import (
	"fmt"
	"slices"

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

// Scenarios lists every scenario in order.
var Scenarios = []Scenario{FileSizes, DBItems, FloatOps, ImageSize, JSONSize, MatrixSize, LoadLow, LoadHigh}

var scenarioNames = map[Scenario]string{
	FileSizes: "file-sizes", DBItems: "db-items", FloatOps: "float-ops", ImageSize: "image-size",
	JSONSize: "json-size", MatrixSize: "matrix-size", LoadLow: "load-low", LoadHigh: "load-high",
}

func (s Scenario) String() string {
	if n, ok := scenarioNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Scenario(%d)", int(s))
}

// ParseScenario reads a scenario name as String prints it.
func ParseScenario(name string) (Scenario, error) {
	for s, n := range scenarioNames {
		if n == name {
			return s, nil
		}
	}
	names := make([]string, 0, len(Scenarios))
	for _, s := range Scenarios {
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

// Apply returns chain with the scenario's payload change (a new slice;
// chain is not modified). Load scenarios leave the chain alone.
func (s Scenario) Apply(chain []segments.Spec) []segments.Spec {
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
	if _, ok := scenarioNames[s]; !ok {
		return fmt.Errorf("sim: inject: unknown scenario %d", int(s))
	}
	a := &c.apps[i]
	switch s {
	case LoadLow:
		a.Load.Scale /= 4
		return nil
	case LoadHigh:
		a.Load.Scale *= 4
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
