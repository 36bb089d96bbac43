package telemetry

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/gym"
)

// Observation is one application's metrics over a snapshot's window: the
// quantities of gym.Metrics, summed or combined over its pods, plus how
// fresh and complete they are.
type Observation struct {
	At     time.Time
	Window time.Duration

	Pods          int // pods aggregated
	ReadyReplicas int // pods whose Ready condition is true
	// Partial lists the pods that are not ready and lack some usage or
	// request metrics (a starting pod): what they have is summed, what
	// they lack is taken as nothing.
	Partial []PodKey
	// Left lists the starting pods (see AggregateStarting) left out for
	// lack of data; Pods does not count them.
	Left []PodKey

	CPULimit    float64 // cores per pod, mean over the pods that have one
	MemoryLimit float64 // bytes per pod, mean over the pods that have one
	CPUUsage    float64 // cores, summed over pods
	MemoryUsage float64 // bytes, summed over pods, mean over the window
	MemoryPeak  float64 // bytes, the largest per-pod working set in the window
	IORate      float64 // disk bytes/s read and written, summed over pods
	NetRate     float64 // network bytes/s received and sent, summed over pods

	ArrivalRate   float64 // requests/s received
	ProcessedRate float64 // requests/s completed
	DroppedRate   float64 // requests/s failed or rejected
	// Latency is the request duration histogram summed over the pods
	// (rates per cumulative bucket); the quantiles are taken from it. They
	// are NaN when no request ran in the window.
	Latency                            []Bucket
	LatencyP50, LatencyP95, LatencyP99 float64 // seconds

	OOMEvents float64 // OOM events in the window, summed over pods (extrapolated)
	OOMKills  int     // OOM events rounded per pod and summed

	// Newest and Oldest bound the pods' newest samples per exporter: Oldest
	// is the stalest data the observation rests on.
	Newest, Oldest time.Time
	// Missing are metrics that are not required (WithRequired) and that some
	// pods lack; they count as zero in the sums.
	Missing Metric
}

// Metrics converts the observation to the simulator's per-step metrics,
// with replicas the desired replica count (the MPA's, which Prometheus does
// not know). Latencies of a window without requests (NaN) become 0, as the
// simulator reports them.
func (o Observation) Metrics(replicas int) gym.Metrics {
	zeroNaN := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	return gym.Metrics{
		Replicas:      replicas,
		ReadyReplicas: o.ReadyReplicas,
		CPULimit:      o.CPULimit,
		MemoryLimit:   o.MemoryLimit,
		CPUUsage:      o.CPUUsage,
		MemoryUsage:   o.MemoryUsage,
		MemoryPeak:    o.MemoryPeak,
		IORate:        o.IORate,
		NetRate:       o.NetRate,
		ArrivalRate:   o.ArrivalRate,
		ProcessedRate: o.ProcessedRate,
		DroppedRate:   o.DroppedRate,
		LatencyP50:    zeroNaN(o.LatencyP50),
		LatencyP95:    zeroNaN(o.LatencyP95),
		LatencyP99:    zeroNaN(o.LatencyP99),
		OOMKills:      o.OOMKills,
	}
}

// problems collects the pods behind each data error of an aggregation.
type problems struct {
	noSeries   []PodKey                    // pods the snapshot does not know
	missing    [32][]PodKey                // per metric bit: no series
	invalid    [32][]PodKey                // per metric bit: NaN, infinite or negative
	stale      [numExporters][]PodKey      // newest sample too old
	staleAge   [numExporters]time.Duration // the oldest such age
	notCurrent [numExporters][]PodKey      // data in the window but no current sample
}

// Aggregate combines the metrics of pods (an application's pods, e.g. from
// the API server) for one container ("" for all containers of each pod,
// see PodSample.Container). It fails with errors matching ErrNoData when a
// pod is unknown to the snapshot or lacks a Required metric (a pod known
// to be not ready may lack usage and request metrics: it is listed in
// Partial), and ErrStale when a pod's newest sample from an exporter it
// has data from is older than MaxAge or no longer current; every failure
// is a *DataError naming the metric or exporter and the pods, joined with
// errors.Join. An empty pod list is ErrNoData.
func (s *Snapshot) Aggregate(pods []PodKey, container string) (Observation, error) {
	return s.AggregateStarting(pods, nil, container)
}

// AggregateStarting is Aggregate where the pods in starting (a subset of
// pods, e.g. started after the window began) may not have been scraped
// yet: one that is unknown to the snapshot or lacks a Required metric is
// left out (listed in Left) instead of failing the aggregation, as the
// HPA leaves out pods that are starting. Leaving out every pod is
// ErrNoData.
func (s *Snapshot) AggregateStarting(pods, starting []PodKey, container string) (Observation, error) {
	o := Observation{At: s.At, Window: s.Window, Pods: len(pods)}
	if len(pods) == 0 {
		return o, &DataError{Err: ErrNoData, Container: container, Detail: "no pods to aggregate"}
	}
	if dup := firstDuplicate(pods); dup != nil {
		return o, fmt.Errorf("telemetry: aggregate: pod %s listed twice", dup)
	}
	var pr problems
	var cpuLimits, memLimits float64
	var nCPULimits, nMemLimits int
	var hist []Bucket
	for _, k := range pods {
		p := s.Pods[k]
		if p == nil {
			if slices.Contains(starting, k) {
				o.Left = append(o.Left, k)
				continue
			}
			pr.noSeries = append(pr.noSeries, k)
			continue
		}
		c, _ := p.Container(container)
		has, invalid := p.Has|c.Has, (p.Invalid|c.Invalid)&^(p.Has|c.Has)
		need := s.Required
		partial := has&MetricReady != 0 && !p.Ready && has&usageMetrics&need != usageMetrics&need
		if partial {
			need &^= usageMetrics
		}
		if need&^has != 0 && slices.Contains(starting, k) {
			// Its data is not used, but stale data still fails, as for
			// every pod.
			s.checkFresh(&pr, &Observation{}, p, has)
			o.Left = append(o.Left, k)
			continue
		}
		if partial {
			o.Partial = append(o.Partial, k)
		}
		for m := range (need &^ has).each() {
			i := bitIndex(m)
			if invalid&m != 0 {
				pr.invalid[i] = append(pr.invalid[i], k)
			} else {
				pr.missing[i] = append(pr.missing[i], k)
			}
		}
		o.Missing |= (AllMetrics &^ s.Required) &^ has
		s.checkFresh(&pr, &o, p, has)

		o.CPUUsage += c.CPUUsage
		o.MemoryUsage += c.MemoryWorkingSet
		o.MemoryPeak = math.Max(o.MemoryPeak, c.MemoryPeak)
		o.IORate += c.IORate
		o.OOMEvents += c.OOMEvents
		o.OOMKills += int(math.Round(c.OOMEvents))
		if c.Has&MetricCPULimit != 0 {
			cpuLimits += c.CPULimit
			nCPULimits++
		}
		if c.Has&MetricMemoryLimit != 0 {
			memLimits += c.MemoryLimit
			nMemLimits++
		}
		o.NetRate += p.NetRate
		o.ArrivalRate += p.Received
		o.ProcessedRate += p.Processed
		o.DroppedRate += p.Failed
		if p.Has&MetricReady != 0 && p.Ready {
			o.ReadyReplicas++
		}
		if p.Has&MetricLatency != 0 {
			hist = addHistogram(hist, p.Latency)
		}
	}
	o.Pods -= len(o.Left)
	if err := pr.err(container, s.MaxAge); err != nil {
		return o, err
	}
	if o.Pods == 0 {
		return o, &DataError{Err: ErrNoData, Container: container, Pods: o.Left, Detail: "only starting pods, none with data yet"}
	}
	if nCPULimits > 0 {
		o.CPULimit = cpuLimits / float64(nCPULimits)
	}
	if nMemLimits > 0 {
		o.MemoryLimit = memLimits / float64(nMemLimits)
	}
	o.Latency = hist
	o.LatencyP50, o.LatencyP95, o.LatencyP99 = math.NaN(), math.NaN(), math.NaN()
	if len(hist) > 0 {
		scratch := make([]Bucket, len(hist))
		for _, q := range []struct {
			q   float64
			dst *float64
		}{{0.5, &o.LatencyP50}, {0.95, &o.LatencyP95}, {0.99, &o.LatencyP99}} {
			copy(scratch, hist)
			*q.dst = Quantile(q.q, scratch)
		}
	}
	return o, nil
}

// checkFresh records the pod's exporters whose data is stale and widens
// the observation's freshness bounds.
func (s *Snapshot) checkFresh(pr *problems, o *Observation, p *PodSample, has Metric) {
	for e := range numExporters {
		if has&e.Metrics() == 0 {
			continue
		}
		seen := p.Seen[e]
		if seen.IsZero() {
			if has&e.Metrics()&s.Required != 0 {
				pr.notCurrent[e] = append(pr.notCurrent[e], p.Key)
			}
			continue
		}
		if o.Newest.IsZero() || seen.After(o.Newest) {
			o.Newest = seen
		}
		if o.Oldest.IsZero() || seen.Before(o.Oldest) {
			o.Oldest = seen
		}
		if age := s.At.Sub(seen); age > s.MaxAge && has&e.Metrics()&s.Required != 0 {
			pr.stale[e] = append(pr.stale[e], p.Key)
			pr.staleAge[e] = max(pr.staleAge[e], age)
		}
	}
}

func (pr *problems) err(container string, maxAge time.Duration) error {
	var errs []error
	if len(pr.noSeries) > 0 {
		errs = append(errs, &DataError{Err: ErrNoData, Container: container, Pods: pr.noSeries, Detail: "no series at all for these pods"})
	}
	for i := range pr.missing {
		if len(pr.missing[i]) > 0 {
			errs = append(errs, &DataError{Err: ErrNoData, Metric: 1 << i, Container: container, Pods: pr.missing[i], Detail: "no series"})
		}
		if len(pr.invalid[i]) > 0 {
			detail := "NaN, infinite or negative value"
			if Metric(1<<i) == MetricLatency {
				detail = "NaN, infinite or negative bucket count, or no +Inf bucket"
			}
			errs = append(errs, &DataError{Err: ErrNoData, Metric: 1 << i, Container: container, Pods: pr.invalid[i], Detail: detail})
		}
	}
	for e := range numExporters {
		if len(pr.stale[e]) > 0 {
			errs = append(errs, &DataError{Err: ErrStale, Exporter: e, Container: container, Pods: pr.stale[e],
				Detail: fmt.Sprintf("newest sample up to %s old, max age %s", pr.staleAge[e].Round(time.Millisecond), maxAge)})
		}
		if len(pr.notCurrent[e]) > 0 {
			errs = append(errs, &DataError{Err: ErrStale, Exporter: e, Container: container, Pods: pr.notCurrent[e],
				Detail: "data in the window but no current sample (series ended)"})
		}
	}
	return errors.Join(errs...)
}

func bitIndex(m Metric) int {
	i := 0
	for m > 1 {
		m >>= 1
		i++
	}
	return i
}

func firstDuplicate(pods []PodKey) *PodKey {
	if len(pods) <= 16 {
		for i := range pods {
			for j := range i {
				if pods[i] == pods[j] {
					return &pods[i]
				}
			}
		}
		return nil
	}
	seen := make(map[PodKey]struct{}, len(pods))
	for i, k := range pods {
		if _, ok := seen[k]; ok {
			return &pods[i]
		}
		seen[k] = struct{}{}
	}
	return nil
}

// addHistogram adds the cumulative buckets h (sorted) to sum (sorted) and
// returns the result. Pods normally share their bucket layout; when they do
// not, only the upper bounds both have are kept: cumulative counts at a
// shared bound add up exactly, so the quantiles stay right at a coarser
// resolution.
func addHistogram(sum, h []Bucket) []Bucket {
	if sum == nil {
		return slices.Clone(h)
	}
	same := len(sum) == len(h)
	for i := 0; same && i < len(h); i++ {
		same = sum[i].UpperBound == h[i].UpperBound
	}
	if same {
		for i := range h {
			sum[i].Count += h[i].Count
		}
		return sum
	}
	out := sum[:0]
	for i, j := 0, 0; i < len(sum) && j < len(h); {
		switch {
		case sum[i].UpperBound < h[j].UpperBound:
			i++
		case sum[i].UpperBound > h[j].UpperBound:
			j++
		default:
			out = append(out, Bucket{UpperBound: sum[i].UpperBound, Count: sum[i].Count + h[j].Count})
			i++
			j++
		}
	}
	return out
}
