package generator

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Family is a kind of application the generator draws: how it draws an
// application's chain from the calibrated segments (docs/extending.md).
type Family struct {
	Name string
	// Chain draws a chain of 1 to maxSegments segments with r from
	// calibrated (segment name → the sizes the profile has entries for,
	// ascending; shared by every application of the pool: read it, do not
	// change it). A chain the profile cannot cost is refused by Generate,
	// naming the family.
	Chain func(r *rand.Rand, maxSegments int, calibrated map[string][]int) ([]segments.Spec, error)
}

// FamilyWeight is a family's share of a pool (Options.Families).
type FamilyWeight struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
}

// Uniform is the paper's family and the default: 1 to maxSegments segments,
// each a calibrated segment and size drawn uniformly.
const Uniform = "uniform"

var (
	familyMu sync.RWMutex
	families = map[string]Family{}
)

func init() {
	RegisterFamily(Family{Name: Uniform, Chain: func(r *rand.Rand, maxSegments int, calibrated map[string][]int) ([]segments.Spec, error) {
		return drawChain(r, maxSegments, poolOf(calibrated)), nil
	}})
}

// RegisterFamily adds a family that Options.Families can draw. It panics
// on a name that is empty or taken, or no Chain: programming errors, as
// with database/sql.Register.
func RegisterFamily(f Family) {
	familyMu.Lock()
	defer familyMu.Unlock()
	if f.Name == "" || f.Chain == nil {
		panic(fmt.Sprintf("generator: RegisterFamily %q: name and Chain are required", f.Name))
	}
	if _, dup := families[f.Name]; dup {
		panic("generator: family " + f.Name + " registered twice")
	}
	families[f.Name] = f
}

// Families are the registered families' names, sorted.
func Families() []string {
	familyMu.RLock()
	defer familyMu.RUnlock()
	var out []string
	for n := range families {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func findFamily(name string) (Family, bool) {
	familyMu.RLock()
	defer familyMu.RUnlock()
	f, ok := families[name]
	return f, ok
}

// poolOf is calibrated as drawChain's pool, in name order.
func poolOf(calibrated map[string][]int) []poolSegment {
	var pool []poolSegment
	for _, n := range slices.Sorted(maps.Keys(calibrated)) {
		pool = append(pool, poolSegment{n, calibrated[n]})
	}
	return pool
}

// pickFamily draws a family by weight.
func pickFamily(r *rand.Rand, fw []FamilyWeight) string {
	total := 0.0
	for _, f := range fw {
		total += f.Weight
	}
	x := r.Float64() * total
	for _, f := range fw {
		if x < f.Weight {
			return f.Name
		}
		x -= f.Weight
	}
	return fw[len(fw)-1].Name
}
