package sim

import (
	"fmt"
	"math"
	"sort"

	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Model is the per-request behaviour of one application on one node class:
// the static part of the simulation, derived from the calibration profile.
type Model struct {
	// CPU is CPU-seconds per request (chain plus request handling), at the
	// node's speed.
	CPU float64
	// Wait is the seconds per request spent off-CPU (sleeps, I/O waits).
	Wait float64
	// P50, P95 and P99 are the isolated service-time quantiles in seconds
	// (one request alone on an unthrottled core).
	P50, P95, P99 float64
	// CV2 is the squared coefficient of variation of the service time.
	CV2 float64
	// BaseMemory is a pod's working set with its inputs prepared and one
	// request in flight, in bytes.
	BaseMemory float64
	// MemoryPerRequest is the working set each further concurrent request
	// adds, in bytes.
	MemoryPerRequest float64
	// IOBytes and NetBytes are disk and network bytes per request.
	IOBytes, NetBytes float64
	// ServiceCPU is the CPU-seconds per request the application's external
	// services (database, object store) spend: the demand on their cores
	// when the simulation gives them a limited number (WithServiceCores).
	ServiceCPU float64
}

// Validate names the first field of m that no simulation can use: every
// field finite and not negative, a positive CPU cost and median service
// time, quantiles in order (P50 ≤ P95 ≤ P99) and a positive base working
// set.
func (m Model) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"cpu", m.CPU}, {"wait", m.Wait}, {"p50", m.P50}, {"p95", m.P95}, {"p99", m.P99}, {"cv2", m.CV2},
		{"baseMemory", m.BaseMemory}, {"memoryPerRequest", m.MemoryPerRequest}, {"ioBytes", m.IOBytes}, {"netBytes", m.NetBytes}, {"serviceCPU", m.ServiceCPU}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) {
			return fmt.Errorf("model: %s %g must be finite and not negative", f.name, f.v)
		}
	}
	switch {
	case !(m.CPU > 0) || !(m.P50 > 0):
		return fmt.Errorf("model: cpu %g and p50 %g must be positive", m.CPU, m.P50)
	case m.P95 < m.P50 || m.P99 < m.P95:
		return fmt.Errorf("model: quantiles p50 %g ≤ p95 %g ≤ p99 %g out of order", m.P50, m.P95, m.P99)
	case !(m.BaseMemory > 0):
		return fmt.Errorf("model: baseMemory %g must be positive", m.BaseMemory)
	}
	return nil
}

// Overheads are the costs of serving a request over HTTP that calibration,
// which runs chains in process, does not see. Fit them with `aware sim
// validate`.
type Overheads struct {
	CPU     float64 // CPU-seconds per request
	Time    float64 // seconds per request off-CPU (network round trip)
	Request float64 // network bytes per request besides payloads (headers)
}

// DefaultOverheads are the loopback HTTP costs measured by `aware sim validate`
// on the calibration machine.
func DefaultOverheads() Overheads {
	return Overheads{CPU: 90e-6, Time: 150e-6, Request: 300}
}

// The workload server's own resident set, on which the profile's
// per-segment working sets (growth over an idle process) sit. Measured as
// VmRSS of `aware workload serve` on the calibration machine (2026-11-25: a
// 69 MB binary, Go 1.26, GOGC 100); see docs/simulator.md, "Validation
// against the real workload server".
const (
	// ServerIdleBytes is the idle server's resident set with its
	// application set up: 40.2–40.6 MiB in five starts, of which 33–34 MiB
	// are the binary's code and data pages that package initialisation
	// touches and 7 MiB anonymous (runtime, package state). The profile's
	// RSSBaseBytes is the same figure for the binary the profile was
	// measured with, which was smaller: 17.3 MiB in the committed profile
	// of 2026-11-21, a 24 MB binary from before the controller and the
	// Kubernetes clients were linked in (that commit rebuilt: 14.8 MiB
	// measuring, 15.6 MiB serving). NewModel takes the larger, so that a
	// profile measured with today's binary or a larger one is used as is.
	ServerIdleBytes = 40.4 * (1 << 20)
	// ServerLoadBytes is what a server under steady load holds beyond its
	// idle resident set whatever the application: the Go heap grown to its
	// GC goal (twice the live heap at GOGC 100, where an idle process after
	// debug.FreeOSMemory, as calibration measures its base, holds the live
	// heap only), the serving goroutines' stacks and the HTTP code paths.
	// Measured with trivial chains and about one request in flight:
	// matMul 75 at 900 req/s, 40.2 → 44.9 MiB; matMul 100 at 200 req/s,
	// 40.4 → 45.1 MiB.
	ServerLoadBytes = 4.7 * (1 << 20)
	// RequestBytes is the least a request in flight holds, whatever it
	// does: its goroutines' stacks, the request, the connection's buffers.
	// Measured: a sleep:400 server at 200 req/s grows by 18 KB per request
	// in flight (80 in flight) beyond ServerLoadBytes; with one slot, 16 KB
	// per queued request (394 → 1184 queued: +12.6 MB).
	RequestBytes = 16 << 10
)

// NewModel derives the model of chain on a node whose CPU is speed times as
// fast as the calibration machine. Sizes the profile lacks are
// interpolated log-log between the nearest calibrated sizes (extrapolated
// beyond them), so instability scenarios may move payloads anywhere.
func NewModel(prof *calibration.Profile, chain []segments.Spec, speed float64, ov Overheads) (Model, error) {
	if len(chain) == 0 {
		return Model{}, fmt.Errorf("model: empty chain")
	}
	if !(speed > 0) {
		return Model{}, fmt.Errorf("model: speed %g must be positive", speed)
	}
	var m Model
	// held is Σ over segments of (wall seconds in the segment × working set
	// a concurrent request holds there): by Little's law a pod with n
	// requests in flight has n·t_i/T of them in segment i.
	var ex2, sd2, ws1, held float64
	for i, seg := range chain {
		e, err := entryAt(prof, seg.Name, seg.Size)
		if err != nil {
			return Model{}, fmt.Errorf("model: chain[%d]: %w", i, err)
		}
		cpuTime := math.Min(e.CPUSeconds, e.ServiceMean)
		wait := math.Max(e.ServiceMean-e.CPUSeconds, 0)
		m.CPU += e.CPUSeconds / speed
		m.Wait += wait
		mean := cpuTime/speed + wait
		m.P50 += mean
		ex := math.Max(e.ServiceP95-e.ServiceMean, e.ServiceCV*e.ServiceMean) / speed
		ex2 += ex * ex
		sd := e.ServiceCV * mean
		sd2 += sd * sd
		ws1 += float64(e.WorkingSet1)
		slope := 0.0
		if c := float64(e.Concurrency); c > 1 {
			slope = float64(e.WorkingSet-e.WorkingSet1) / (c - 1)
		}
		held += mean * math.Max(slope, RequestBytes)
		m.ServiceCPU += e.ServiceCPUSeconds
		m.IOBytes += diskBytes(seg.Name, e)
		m.NetBytes += netBytes(seg.Name, e)
	}
	m.CPU += ov.CPU / speed
	m.Wait += ov.Time
	m.P50 += ov.CPU/speed + ov.Time
	ex := math.Sqrt(ex2)
	// Quantiles of a sum of independent segments: means add, excesses add
	// in quadrature; p99's excess scales like a normal's.
	m.P95 = m.P50 + ex
	m.CV2 = sd2 / (m.P50 * m.P50)
	m.P99 = m.P50 + ex*2.326/1.645
	m.BaseMemory = math.Max(float64(prof.RSSBaseBytes), ServerIdleBytes) + ServerLoadBytes + ws1
	// A further concurrent request holds, on average over its time in the
	// pod, each segment's per-request working set for the share of its time
	// spent there, and at least RequestBytes throughout (HTTP handling
	// included).
	m.MemoryPerRequest = RequestBytes
	if m.P50 > 0 {
		m.MemoryPerRequest = (held + (ov.CPU/speed+ov.Time)*RequestBytes) / m.P50
	}
	m.NetBytes += ov.Request
	return m, nil
}

// diskBytes is the disk traffic of a segment: only the file segments touch
// the local disk; the others' /proc I/O counters are noise.
func diskBytes(name string, e calibration.Entry) float64 {
	switch name {
	case "readFile", "writeFile":
		return e.ReadBytes + e.WriteBytes
	}
	return 0
}

// netBytes is the network traffic of a segment to external services.
func netBytes(name string, e calibration.Entry) float64 {
	info, _ := segments.Lookup(name)
	for _, n := range info.Needs {
		if n == "objects" || n == "db" {
			return e.ReadBytes + e.WriteBytes
		}
	}
	return 0
}

// entryAt returns the profile entry of (name, size), interpolating the
// numeric fields log-log between calibrated sizes.
func entryAt(prof *calibration.Profile, name string, size int) (calibration.Entry, error) {
	if e, ok := prof.Lookup(name, size); ok {
		return e, nil
	}
	if size <= 0 {
		return calibration.Entry{}, fmt.Errorf("segment %s: size %d must be positive", name, size)
	}
	var es []calibration.Entry
	for _, e := range prof.Entries {
		if e.Segment == name {
			es = append(es, e)
		}
	}
	if len(es) == 0 {
		return calibration.Entry{}, fmt.Errorf("segment %q is not in the calibration profile", name)
	}
	if len(es) == 1 {
		return calibration.Entry{}, fmt.Errorf("segment %s: size %d is not calibrated and one size cannot be extrapolated", name, size)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Size < es[j].Size })
	k := sort.Search(len(es), func(i int) bool { return es[i].Size > size })
	k = max(1, min(k, len(es)-1))
	lo, hi := es[k-1], es[k]
	f := (math.Log(float64(size)) - math.Log(float64(lo.Size))) / (math.Log(float64(hi.Size)) - math.Log(float64(lo.Size)))
	ip := func(a, b float64) float64 {
		if a <= 0 || b <= 0 {
			return math.Max(0, a+f*(b-a))
		}
		return math.Exp(math.Log(a) + f*(math.Log(b)-math.Log(a)))
	}
	e := lo
	e.Size = size
	e.CPUSeconds = ip(lo.CPUSeconds, hi.CPUSeconds)
	e.ServiceMean = ip(lo.ServiceMean, hi.ServiceMean)
	e.ServiceP95 = ip(lo.ServiceP95, hi.ServiceP95)
	e.ServiceCV = ip(lo.ServiceCV, hi.ServiceCV)
	e.WorkingSet = int64(ip(float64(lo.WorkingSet), float64(hi.WorkingSet)))
	e.WorkingSet1 = int64(ip(float64(lo.WorkingSet1), float64(hi.WorkingSet1)))
	e.ReadBytes = ip(lo.ReadBytes, hi.ReadBytes)
	e.WriteBytes = ip(lo.WriteBytes, hi.WriteBytes)
	return e, nil
}
