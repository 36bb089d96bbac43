package telemetry

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// PodKey names a pod.
type PodKey struct{ Namespace, Pod string }

// String formats the key as namespace/pod.
func (k PodKey) String() string { return k.Namespace + "/" + k.Pod }

func comparePodKeys(a, b PodKey) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod))
}

// ContainerSample is what a snapshot knows of one container of a pod. A
// value counts only if its Metric is in Has; Invalid marks metrics whose
// value was NaN, infinite or negative (they are not in Has).
type ContainerSample struct {
	Name             string
	CPUUsage         float64 // cores, mean over the window
	MemoryWorkingSet float64 // bytes, mean over the window
	MemoryPeak       float64 // bytes, largest sample in the window
	IORate           float64 // disk bytes/s read and written
	OOMEvents        float64 // OOM events in the window (increase, extrapolated)
	CPULimit         float64 // cores
	MemoryLimit      float64 // bytes
	Has, Invalid     Metric
}

// PodSample is what a snapshot knows of one pod: per-container usage and
// limits, and the pod-level network, readiness and request metrics. Rates
// are per second over the snapshot's window. A value counts only if its
// Metric is in Has (pod-level metrics) or the container's Has.
type PodSample struct {
	Key        PodKey
	Containers []ContainerSample // sorted by name
	NetRate    float64           // network bytes/s received and transmitted
	Ready      bool
	Received   float64 // requests/s received
	Processed  float64 // requests/s completed successfully
	Failed     float64 // requests/s failed or rejected
	// Latency is the request duration histogram: per upper bound (seconds),
	// the rate of observations at most that long, sorted, ending with +Inf.
	// Summing these across pods and then taking a quantile is how quantiles
	// aggregate correctly.
	Latency []Bucket
	// Seen is the timestamp of the pod's newest sample per exporter (zero:
	// none at the snapshot's time).
	Seen         [numExporters]time.Time
	Has, Invalid Metric // pod-level metrics
}

// Newest is the timestamp of the pod's freshest sample.
func (p *PodSample) Newest() time.Time {
	var t time.Time
	for _, s := range p.Seen {
		if s.After(t) {
			t = s
		}
	}
	return t
}

// Container returns the named container's sample. With name "" it returns
// the sum over all containers (MemoryPeak: the sum of the containers'
// peaks, an upper bound of the pod's), a metric counting as present if any
// container has it; use "" only for single-container pods or when every
// container reports every metric.
func (p *PodSample) Container(name string) (ContainerSample, bool) {
	if name != "" {
		i, ok := slices.BinarySearchFunc(p.Containers, name, func(c ContainerSample, n string) int { return cmp.Compare(c.Name, n) })
		if !ok {
			return ContainerSample{Name: name}, false
		}
		return p.Containers[i], true
	}
	var sum ContainerSample
	for _, c := range p.Containers {
		sum.CPUUsage += c.CPUUsage
		sum.MemoryWorkingSet += c.MemoryWorkingSet
		sum.MemoryPeak += c.MemoryPeak
		sum.IORate += c.IORate
		sum.OOMEvents += c.OOMEvents
		sum.CPULimit += c.CPULimit
		sum.MemoryLimit += c.MemoryLimit
		sum.Has |= c.Has
		sum.Invalid |= c.Invalid
	}
	sum.Invalid &^= sum.Has
	return sum, len(p.Containers) > 0
}

// container returns the named container of the pod, adding it if new.
func (p *PodSample) container(name string) *ContainerSample {
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i]
		}
	}
	p.Containers = append(p.Containers, ContainerSample{Name: name})
	return &p.Containers[len(p.Containers)-1]
}

// DefaultMaxAge is the oldest a pod's newest sample from an exporter may be
// unless WithMaxAge says otherwise: two scrapes at the common 30s interval.
const DefaultMaxAge = time.Minute

// Snapshot is every pod's metrics at one instant, from one round of
// queries. Its exported fields let fakes build one (see NewSnapshot).
type Snapshot struct {
	At     time.Time     // the evaluation time of every query
	Window time.Duration // the rate window
	// MaxAge is how old a pod's newest sample from an exporter may be
	// before Aggregate reports ErrStale.
	MaxAge time.Duration
	// Required are the metrics Aggregate insists on; the others are
	// summed where present and reported in Observation.Missing.
	Required Metric
	Pods     map[PodKey]*PodSample
	Queries  []QueryStat   // this snapshot's queries, in order
	Elapsed  time.Duration // wall time of the round
}

// NewSnapshot builds a snapshot from samples, for fakes and tests: MaxAge
// DefaultMaxAge, every metric required, containers sorted, and zero Seen
// entries of exporters a pod has data from set to at (fresh).
func NewSnapshot(at time.Time, window time.Duration, pods ...PodSample) *Snapshot {
	s := &Snapshot{At: at, Window: window, MaxAge: DefaultMaxAge, Required: AllMetrics, Pods: make(map[PodKey]*PodSample, len(pods))}
	for i := range pods {
		p := pods[i]
		p.Containers = slices.Clone(p.Containers)
		slices.SortFunc(p.Containers, func(a, b ContainerSample) int { return cmp.Compare(a.Name, b.Name) })
		has := p.Has
		for _, c := range p.Containers {
			has |= c.Has
		}
		for e := range numExporters {
			if p.Seen[e].IsZero() && has&e.Metrics() != 0 {
				p.Seen[e] = at
			}
		}
		s.Pods[p.Key] = &p
	}
	return s
}

// Pod returns the sample of a pod.
func (s *Snapshot) Pod(k PodKey) (*PodSample, bool) {
	p, ok := s.Pods[k]
	return p, ok
}

// PodKeys returns the snapshot's pods, sorted.
func (s *Snapshot) PodKeys() []PodKey {
	keys := make([]PodKey, 0, len(s.Pods))
	for k := range s.Pods {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, comparePodKeys)
	return keys
}

// Newest is the timestamp of the freshest sample in the snapshot.
func (s *Snapshot) Newest() time.Time {
	var t time.Time
	for _, p := range s.Pods {
		if n := p.Newest(); n.After(t) {
			t = n
		}
	}
	return t
}

// builder fills a snapshot from query results.
type builder struct {
	snap *Snapshot
}

func (b *builder) pod(ns, name string) (*PodSample, bool) {
	if name == "" {
		return nil, false
	}
	k := PodKey{Namespace: ns, Pod: name}
	p := b.snap.Pods[k]
	if p == nil {
		p = &PodSample{Key: k}
		b.snap.Pods[k] = p
	}
	return p, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// measurable reports whether v can be a measured quantity: every metric
// read here (usage, limits, rates, counts, readiness) is finite and not
// negative, so a negative value is as broken as a NaN.
func measurable(v float64) bool { return finite(v) && v >= 0 }

// add applies one query's result.
func (b *builder) add(q *query, vec []vecSample) error {
	for i := range vec {
		s := &vec[i]
		p, ok := b.pod(s.namespace, s.pod)
		if !ok {
			continue
		}
		switch q.kind {
		case kindContainer:
			setContainer(p.container(s.container), q.metric, s.value)
		case kindLimits:
			switch s.resource {
			case "cpu":
				setContainer(p.container(s.container), MetricCPULimit, s.value)
			case "memory":
				setContainer(p.container(s.container), MetricMemoryLimit, s.value)
			}
		case kindPod:
			setPod(p, q.metric, s.value)
		case kindLatency:
			le, err := strconv.ParseFloat(s.le, 64)
			if err != nil {
				return fmt.Errorf("pod %s: bucket le=%q: %w", p.Key, s.le, err)
			}
			p.Latency = append(p.Latency, Bucket{UpperBound: le, Count: s.value})
		case kindFreshness:
			if !finite(s.value) {
				continue
			}
			for e := range numExporters {
				if s.source == e.String() {
					p.Seen[e] = time.UnixMilli(int64(math.Round(s.value * 1000))).In(b.snap.At.Location())
				}
			}
		}
	}
	return nil
}

func setContainer(c *ContainerSample, m Metric, v float64) {
	if !measurable(v) {
		c.Invalid |= m
		return
	}
	switch m {
	case MetricCPUUsage:
		c.CPUUsage = v
	case MetricMemoryWorkingSet:
		c.MemoryWorkingSet = v
	case MetricMemoryPeak:
		c.MemoryPeak = v
	case MetricIORate:
		c.IORate = v
	case MetricOOMEvents:
		c.OOMEvents = v
	case MetricCPULimit:
		c.CPULimit = v
	case MetricMemoryLimit:
		c.MemoryLimit = v
	}
	c.Has |= m
}

func setPod(p *PodSample, m Metric, v float64) {
	if !measurable(v) {
		p.Invalid |= m
		return
	}
	switch m {
	case MetricNetRate:
		p.NetRate = v
	case MetricReady:
		p.Ready = v >= 0.5
	case MetricReceived:
		p.Received = v
	case MetricProcessed:
		p.Processed = v
	case MetricFailed:
		p.Failed = v
	}
	p.Has |= m
}

// finish sorts containers and histogram buckets and checks each pod's
// histogram: it needs a +Inf bucket and finite counts.
func (b *builder) finish() {
	for _, p := range b.snap.Pods {
		slices.SortFunc(p.Containers, func(a, b ContainerSample) int { return cmp.Compare(a.Name, b.Name) })
		if len(p.Latency) == 0 {
			continue
		}
		slices.SortFunc(p.Latency, func(a, b Bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) })
		ok := math.IsInf(p.Latency[len(p.Latency)-1].UpperBound, 1)
		for _, x := range p.Latency {
			ok = ok && measurable(x.Count)
		}
		if ok {
			p.Has |= MetricLatency
		} else {
			p.Invalid |= MetricLatency
		}
	}
}
