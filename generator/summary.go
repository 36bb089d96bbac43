package generator

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/internal/quantile"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

// Intensity classes of an application.
const (
	ClassCPU    = "cpu"
	ClassMemory = "memory"
	ClassIO     = "io"
	ClassWait   = "wait"
)

// Reference capacities of one busy core used by Classify.
const (
	// IOPerCore is bytes/s of reads and writes per core beyond which a
	// chain is I/O-intensive.
	IOPerCore = 50e6
	// MemoryPerCore is the memory held by in-flight requests per busy core
	// beyond which a chain is memory-intensive (the pod memory minimum).
	MemoryPerCore = 256 * gym.MiB
	// MinCPUShare is the share of the service time on a CPU below which a
	// chain that is neither I/O- nor memory-intensive mostly waits.
	MinCPUShare = 0.5
)

// Intensity classifies a chain from its calibrated costs, taken at the
// rate that keeps one core busy (1 / CPU-seconds per request, HTTP
// overhead included).
type Intensity struct {
	// Class is "io" if IO ≥ 1 and IO ≥ Memory, else "memory" if Memory ≥ 1,
	// else "wait" if CPUShare < MinCPUShare, else "cpu".
	Class string
	// CPUShare is the share of the service time spent on a CPU.
	CPUShare float64
	// IO is the bytes/s read and written at that rate, over IOPerCore.
	IO float64
	// Memory is the working set of the requests in flight at that rate
	// (Little's law), over MemoryPerCore.
	Memory float64
}

// Classify returns the intensity of a chain; every segment must be in the
// profile.
func Classify(prof *calibration.Profile, chain []segments.Spec) (Intensity, error) {
	c, err := chainCost(prof, chain)
	if err != nil {
		return Intensity{}, err
	}
	in := Intensity{
		CPUShare: c.cpuWall / c.wall,
		IO:       c.io / c.cpu / IOPerCore,
		Memory:   c.wall / c.cpu * c.perRequest / MemoryPerCore,
	}
	switch {
	case in.IO >= 1 && in.IO >= in.Memory:
		in.Class = ClassIO
	case in.Memory >= 1:
		in.Class = ClassMemory
	case in.CPUShare < MinCPUShare:
		in.Class = ClassWait
	default:
		in.Class = ClassCPU
	}
	return in, nil
}

// Count is a named count.
type Count struct {
	Name string
	N    int
}

// SegmentCount counts a segment's uses in chains and the apps using it.
type SegmentCount struct {
	Name string
	Uses int
	Apps int
}

// Quantiles summarise a distribution.
type Quantiles struct {
	Min, P10, P50, P90, Max float64
}

// Summary describes a pool of applications.
type Summary struct {
	Apps, Train, Test int
	Segments          []SegmentCount // by name
	// ChainLengths[k] is the number of apps with k+1 segments.
	ChainLengths []int
	Classes      []Count // intensity classes; "unknown" for chains the profile lacks
	SLOKinds     []Count
	// Slack is the SLO slack distribution; Tight counts apps with slack
	// below TightSlack.
	Slack       Quantiles
	Tight       int
	NodeClasses []Count
	Sources     []Count
	// MeanRate is requests/s; Demand is cores at the mean rate on the app's
	// node; Latency is the latency SLOs' p99 bound in seconds.
	MeanRate, Demand, Latency Quantiles
	// Reference is the latency SLOs' reference p99 in seconds, Concurrency
	// the servers' request slots and InitialMemory the initial memory per
	// pod in MiB.
	Reference, Concurrency, InitialMemory Quantiles
	// Tuning summarises the search of the HPA+VPA baseline's CPU targets
	// (zero when no app was tuned).
	Tuning TuningSummary
}

// TuningSummary describes the per-app HPA targets of a pool.
type TuningSummary struct {
	// Tuned apps have a Tuning record; Met of them met the SLO at their
	// target in the calibration window.
	Tuned, Met    int
	Window        string
	MaxViolations float64
	// CPUTarget and Violations are the chosen targets and the calibration
	// window's violation fractions at them.
	CPUTarget, Violations Quantiles
}

// TightSlack is the slack below which a summary counts an SLO as tight.
const TightSlack = 1.5

// Summarize describes apps; prof gives the chains' costs (chains with
// segments the profile lacks count as class "unknown" and add no demand).
func Summarize(apps []App, prof *calibration.Profile) Summary {
	s := Summary{Apps: len(apps)}
	segs := map[string]*SegmentCount{}
	classes, kinds, nodes, sources := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	var slack, rate, demand, latency, ref, conc, mem, target, viol []float64
	for _, a := range apps {
		switch a.Split {
		case SplitTrain:
			s.Train++
		case SplitTest:
			s.Test++
		}
		inApp := map[string]bool{}
		for _, seg := range a.Spec.Segments {
			sc := segs[seg.Name]
			if sc == nil {
				sc = &SegmentCount{Name: seg.Name}
				segs[seg.Name] = sc
			}
			sc.Uses++
			if !inApp[seg.Name] {
				sc.Apps++
				inApp[seg.Name] = true
			}
		}
		if n := len(a.Spec.Segments); n > 0 {
			for len(s.ChainLengths) < n {
				s.ChainLengths = append(s.ChainLengths, 0)
			}
			s.ChainLengths[n-1]++
		}
		class := "unknown"
		if prof != nil {
			if in, err := Classify(prof, a.Spec.Segments); err == nil {
				class = in.Class
			}
			if c, err := chainCost(prof, a.Spec.Segments); err == nil {
				demand = append(demand, a.Load.MeanRate*c.cpuAt(a.Env.Speed))
			}
		}
		classes[class]++
		kinds[a.SLO.Kind]++
		nodes[a.Env.NodeClass]++
		sources[a.Load.Source]++
		slack = append(slack, a.SLO.Slack)
		if a.SLO.Slack < TightSlack {
			s.Tight++
		}
		rate = append(rate, a.Load.MeanRate)
		if a.SLO.Kind == LatencySLO {
			latency = append(latency, a.SLO.LatencyP99)
			ref = append(ref, a.SLO.Reference)
		}
		conc = append(conc, float64(a.Concurrency))
		mem = append(mem, a.Initial.Memory/gym.MiB)
		if t := a.Tuning; t != nil {
			s.Tuning.Tuned++
			if t.Met {
				s.Tuning.Met++
			}
			s.Tuning.Window, s.Tuning.MaxViolations = t.Window, t.MaxViolations
			target = append(target, a.Profile.Targets.CPU)
			viol = append(viol, t.Violations)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(segs)) {
		s.Segments = append(s.Segments, *segs[name])
	}
	s.Classes, s.SLOKinds = sortedCounts(classes), sortedCounts(kinds)
	s.NodeClasses, s.Sources = sortedCounts(nodes), sortedCounts(sources)
	s.Slack, s.MeanRate = quantiles(slack), quantiles(rate)
	s.Demand, s.Latency = quantiles(demand), quantiles(latency)
	s.Reference, s.Concurrency, s.InitialMemory = quantiles(ref), quantiles(conc), quantiles(mem)
	s.Tuning.CPUTarget, s.Tuning.Violations = quantiles(target), quantiles(viol)
	return s
}

// quantiles interpolates linearly between order statistics; all zero when
// x is empty.
func quantiles(x []float64) Quantiles {
	if len(x) == 0 {
		return Quantiles{}
	}
	s := slices.Clone(x)
	slices.Sort(s)
	q := func(p float64) float64 { return quantile.LinearSorted(s, p) }
	return Quantiles{Min: s[0], P10: q(0.1), P50: q(0.5), P90: q(0.9), Max: s[len(s)-1]}
}

// table is a titled table of cells.
type table struct {
	title  string
	header []string
	rows   [][]string
}

func (s Summary) tables() []table {
	pct := func(n int) string {
		if s.Apps == 0 {
			return "0 %"
		}
		return strconv.FormatFloat(100*float64(n)/float64(s.Apps), 'f', 1, 64) + " %"
	}
	counts := func(title, key string, cs []Count) table {
		t := table{title: title, header: []string{key, "apps", "share"}}
		for _, c := range cs {
			t.rows = append(t.rows, []string{c.Name, strconv.Itoa(c.N), pct(c.N)})
		}
		return t
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	quant := func(name string, q Quantiles) []string {
		return []string{name, g(q.Min), g(q.P10), g(q.P50), g(q.P90), g(q.Max)}
	}

	pool := table{title: "Pool", header: []string{"apps", "train", "test", "tight SLOs (slack < " + g(TightSlack) + ")"},
		rows: [][]string{{strconv.Itoa(s.Apps), strconv.Itoa(s.Train), strconv.Itoa(s.Test), strconv.Itoa(s.Tight)}}}
	segs := table{title: "Segments", header: []string{"segment", "uses", "apps", "share of apps"}}
	for _, c := range s.Segments {
		segs.rows = append(segs.rows, []string{c.Name, strconv.Itoa(c.Uses), strconv.Itoa(c.Apps), pct(c.Apps)})
	}
	lengths := table{title: "Chain length", header: []string{"segments", "apps", "share"}}
	for k, n := range s.ChainLengths {
		lengths.rows = append(lengths.rows, []string{strconv.Itoa(k + 1), strconv.Itoa(n), pct(n)})
	}
	dist := table{title: "Distributions", header: []string{"quantity", "min", "p10", "p50", "p90", "max"},
		rows: [][]string{
			quant("SLO slack", s.Slack),
			quant("latency SLO p99 (s)", s.Latency),
			quant("reference p99 (s)", s.Reference),
			quant("mean rate (req/s)", s.MeanRate),
			quant("CPU demand at mean rate (cores)", s.Demand),
			quant("server concurrency (requests)", s.Concurrency),
			quant("initial memory (MiB)", s.InitialMemory),
		}}
	tables := []table{
		pool, segs, lengths,
		counts("Resource intensity", "class", s.Classes),
		counts("SLO kinds", "kind", s.SLOKinds),
		dist,
		counts("Node classes", "node class", s.NodeClasses),
		counts("Trace sources", "source", s.Sources),
	}
	if t := s.Tuning; t.Tuned > 0 {
		tables = append(tables, table{title: "HPA+VPA baseline's CPU targets",
			header: []string{"tuned apps", "met the SLO", "calibration window", "max violations", "quantity", "min", "p10", "p50", "p90", "max"},
			rows: [][]string{
				append([]string{strconv.Itoa(t.Tuned), strconv.Itoa(t.Met), t.Window, g(t.MaxViolations)}, quant("CPU target", t.CPUTarget)...),
				append([]string{"", "", "", ""}, quant("violations at it", t.Violations)...),
			}})
	}
	return tables
}

// WriteMarkdown writes the summary as Markdown tables.
func (s Summary) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	for i, t := range s.tables() {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### %s\n\n| %s |\n|%s\n", t.title, strings.Join(t.header, " | "), strings.Repeat(" --- |", len(t.header)))
		for _, r := range t.rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteText writes the summary as aligned plain-text tables.
func (s Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, t := range s.tables() {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s\n%s\n", t.title, strings.Join(t.header, "\t"))
		for _, r := range t.rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
	}
	return tw.Flush()
}
