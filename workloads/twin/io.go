package twin

import (
	"math"
	"slices"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// ioShares splits the simulator's disk and network rates, which sum both
// directions, into reads and receives: the shares the chain's calibrated
// segments read of what they move. As in the simulator, disk traffic is
// the file segments' and network traffic that of the segments using the
// object store or the database, plus the request overhead split evenly.
// Sizes the profile lacks take the nearest calibrated size's shares; a
// chain that moves nothing splits evenly.
func ioShares(prof *calibration.Profile, chain []segments.Spec) (diskRead, netRecv float64) {
	var dr, dw float64
	nr := sim.DefaultOverheads().Request / 2
	nw := nr
	for _, s := range chain {
		e, ok := nearestEntry(prof, s.Name, s.Size)
		if !ok {
			continue
		}
		switch s.Name {
		case "readFile", "writeFile":
			dr += e.ReadBytes
			dw += e.WriteBytes
		}
		if info, ok := segments.Lookup(s.Name); ok && (slices.Contains(info.Needs, "objects") || slices.Contains(info.Needs, "db")) {
			nr += e.ReadBytes
			nw += e.WriteBytes
		}
	}
	diskRead = 0.5
	if dr+dw > 0 {
		diskRead = dr / (dr + dw)
	}
	return diskRead, nr / (nr + nw)
}

// nearestEntry is the profile entry of segment name at size, or at the
// calibrated size nearest to it on a log scale.
func nearestEntry(prof *calibration.Profile, name string, size int) (calibration.Entry, bool) {
	if e, ok := prof.Lookup(name, size); ok {
		return e, true
	}
	var best calibration.Entry
	found, dist := false, math.Inf(1)
	for _, e := range prof.Entries {
		if e.Segment != name || e.Size <= 0 || size <= 0 {
			continue
		}
		if d := math.Abs(math.Log(float64(e.Size) / float64(size))); d < dist {
			best, found, dist = e, true, d
		}
	}
	return best, found
}
