package calibration

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Version is the profile format version this package reads and writes.
const Version = 1

// Profile is the result of a calibration run.
type Profile struct {
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	// Command is the command line that produced the profile.
	Command string  `json:"command"`
	Machine Machine `json:"machine"`
	Options Options `json:"options"`
	// RSSBaseBytes is the largest idle resident set of the measuring
	// processes (see Entry.RSSBaseBytes).
	RSSBaseBytes int64   `json:"rssBaseBytes"`
	Entries      []Entry `json:"entries"`
}

// Entry is the cost of one segment at one payload size.
type Entry struct {
	Segment string `json:"segment"`
	Unit    string `json:"unit"`
	Size    int    `json:"size"`
	// Requests is the number of measured requests per repeat.
	Requests int `json:"requests"`
	// CPUSeconds is the median over repeats of process CPU-seconds (user +
	// system) per request, measured one request at a time.
	CPUSeconds float64 `json:"cpuSeconds"`
	// CPUSecondsRepeats holds each repeat's CPU-seconds per request.
	CPUSecondsRepeats []float64 `json:"cpuSecondsRepeats"`
	// ServiceCPUSeconds is the median over repeats of the CPU-seconds per
	// request the external services (database, object store) spent on the
	// segment, measured like CPUSeconds from the services' processes; 0
	// when the segment uses none or they were not metered (profiles
	// before 2026-11-25, services not started by the calibrating command).
	ServiceCPUSeconds float64 `json:"serviceCpuSeconds,omitempty"`
	// ServiceCPURepeats holds each repeat's figure.
	ServiceCPURepeats []float64 `json:"serviceCpuSecondsRepeats,omitempty"`
	// ServiceMean and ServiceCV describe the wall-clock service time of one
	// request when run alone (seconds; CV = stddev / mean).
	ServiceMean float64 `json:"serviceMeanSeconds"`
	ServiceCV   float64 `json:"serviceCV"`
	ServiceP95  float64 `json:"serviceP95Seconds"`
	// AllocBytes is heap bytes allocated per request.
	AllocBytes float64 `json:"allocBytes"`
	// WorkingSet is the peak resident-set growth over the idle baseline while
	// Concurrency requests run at once; WorkingSet1 is the same with one.
	WorkingSet  int64 `json:"workingSetBytes"`
	WorkingSet1 int64 `json:"workingSet1Bytes"`
	Concurrency int   `json:"concurrency"`
	// ReadBytes and WriteBytes are bytes passed through read/write system
	// calls per request (files and sockets, /proc/self/io rchar and wchar).
	ReadBytes  float64 `json:"readBytes"`
	WriteBytes float64 `json:"writeBytes"`
	// RSSBaseBytes is the measuring process's resident set before it set up
	// the segment.
	RSSBaseBytes int64 `json:"rssBaseBytes"`
	// PayloadIn and PayloadOut are the segment's own byte counts per request.
	PayloadIn  float64 `json:"payloadInBytes"`
	PayloadOut float64 `json:"payloadOutBytes"`
}

// Spread is the relative spread of the repeats' CPU-seconds:
// (max − min) / median. It is 0 with fewer than two repeats.
func (e Entry) Spread() float64 {
	if len(e.CPUSecondsRepeats) < 2 || e.CPUSeconds == 0 {
		return 0
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range e.CPUSecondsRepeats {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return (hi - lo) / e.CPUSeconds
}

// Agrees reports whether the repeats agree within rel of the median, or
// within an absolute CPU difference of abs or idle × the service time,
// whichever is looser: a request that keeps a core busy for less than
// idle of its lifetime (a sleep) measures the runtime's background work, and
// per-request costs of a few microseconds measure timer resolution.
func (e Entry) Agrees(rel, abs, idle float64) bool {
	return e.Spread() <= rel || e.Spread()*e.CPUSeconds <= max(abs, idle*e.ServiceMean)
}

// Lookup returns the entry for segment at size.
func (p *Profile) Lookup(segment string, size int) (Entry, bool) {
	for _, e := range p.Entries {
		if e.Segment == segment && e.Size == size {
			return e, true
		}
	}
	return Entry{}, false
}

// Validate checks that the profile is usable, naming the bad entry.
func (p *Profile) Validate() error {
	if p.Version != Version {
		return fmt.Errorf("version %d: this build reads version %d", p.Version, Version)
	}
	if len(p.Entries) == 0 {
		return errors.New("entries: empty")
	}
	seen := map[string]bool{}
	var errs []error
	for i, e := range p.Entries {
		key := fmt.Sprintf("%s/%d", e.Segment, e.Size)
		switch {
		case e.Segment == "":
			errs = append(errs, fmt.Errorf("entries[%d].segment: empty", i))
		case e.Size <= 0:
			errs = append(errs, fmt.Errorf("entries[%d] (%s).size: %d must be positive", i, e.Segment, e.Size))
		case seen[key]:
			errs = append(errs, fmt.Errorf("entries[%d]: duplicate %s", i, key))
		case !finiteNonNeg(e.CPUSeconds, e.ServiceMean, e.ServiceCV, e.AllocBytes, e.ReadBytes, e.WriteBytes):
			errs = append(errs, fmt.Errorf("entries[%d] (%s): negative or non-finite measurement", i, key))
		case e.ServiceMean == 0:
			errs = append(errs, fmt.Errorf("entries[%d] (%s).serviceMeanSeconds: zero", i, key))
		}
		seen[key] = true
	}
	return errors.Join(errs...)
}

func finiteNonNeg(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return true
}

// Sort orders entries by segment name, then size.
func (p *Profile) Sort() {
	sort.Slice(p.Entries, func(i, j int) bool {
		a, b := p.Entries[i], p.Entries[j]
		if a.Segment != b.Segment {
			return a.Segment < b.Segment
		}
		return a.Size < b.Size
	})
}

// Parse decodes and validates a profile; name is used in error messages.
func Parse(name string, data []byte) (*Profile, error) {
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("calibration profile %s: %w", name, err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("calibration profile %s: %w", name, err)
	}
	return &p, nil
}

// Load reads a profile file.
func Load(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("calibration profile: %w", err)
	}
	return Parse(path, data)
}

// Save writes the profile atomically (temporary file, then rename).
func (p *Profile) Save(path string) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("refusing to save invalid profile: %w", err)
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("save profile: %w", err)
	}
	return nil
}

//go:embed profile.json
var embedded []byte

// Default returns the committed profile (workloads/calibration/profile.json).
func Default() (*Profile, error) {
	return Parse("embedded profile.json", embedded)
}
