package scale

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aware-autoscaler/aware/internal/quantile"
)

// Result is what one run measured.
type Result struct {
	// Apps is the number of applications, one MPA each.
	Apps int
	// Nodes is the number of kwok nodes.
	Nodes int
	// Pods and Pending are the numbers of Running and Pending pods of the
	// applications at the end; WithMetrics the MPAs whose
	// MetricsAvailable condition was True.
	Pods, Pending, WithMetrics int
	// Resizing counts the Running pods at the end whose last resize the
	// kubelet (kwok) had not reported yet.
	Resizing int
	// WithoutMetrics quotes, for a few MPAs without fresh metrics at the
	// end, their MetricsAvailable condition ("name: status reason:
	// message").
	WithoutMetrics []string
	// Step is the controller's step.
	Step time.Duration
	// Setup is how long the preparation took.
	Setup Setup
	// Rounds are the measured rounds, in order.
	Rounds []Round
	// Window is the measured window, from the first round's boundary to
	// the end of the last round's step (or its last arrival or deadline
	// when later): the denominator of CPU.
	Window time.Duration
	// CPU is the controller process's average CPU over Window in cores
	// (user + system time from /proc/<pid>/stat); CPUPeak the busiest
	// one-second interval of the samples taken every second.
	CPU, CPUPeak float64
	// HostCPU is the whole machine's busy CPU over Window in cores, of
	// HostCores: the testbed (control plane, Prometheus, twin) shares it
	// with the controller, and the API latency the controller waits on
	// grows as it saturates. Processes breaks the testbed's CPU down.
	HostCPU   float64
	HostCores int
	Processes []ProcessCPU
	// Pressure is the share of Window in which some task waited for CPU
	// and for I/O (/proc/pressure; nil where the kernel has none): which
	// of the two the testbed is short of.
	Pressure *Pressure
	// RSSMax is the highest VmRSS sampled every second over Window; HWM
	// is VmHWM at the end (the peak since the controller started,
	// warm-up included). Both in bytes.
	RSSMax, HWM uint64
	// LiveHeap is the Go runtime's live heap at the end, in bytes
	// (go_gc_heap_live_bytes; 0 when not exported).
	LiveHeap uint64
	// Errors counts aware_controller_errors_total's increase over Window
	// by "where"; ErrorsTotal its values at the end (warm-up included,
	// when observations fail until Prometheus has a step of samples).
	Errors, ErrorsTotal map[string]float64
	// Refused counts the requests of the controller and the agent runner
	// that the API server refused with 403 Forbidden since they started
	// (its audit log): a permission their generated ClusterRoles lack.
	// FirstRefused is the first of them.
	Refused      int
	FirstRefused string
	// Steps is the number of MPA steps over Window and StepMean their mean
	// duration (aware_controller_step_seconds).
	Steps    float64
	StepMean time.Duration
	// Phases is the mean duration of each phase of a step over Window
	// (aware_controller_step_phase_seconds): observe includes the wait for
	// the round's Prometheus snapshot; status counts only the steps that
	// wrote it.
	Phases map[string]time.Duration
	// Actuations counts the changes applied over Window by kind;
	// Decisions the decisions the updater started and DelayMean their
	// mean wait (aware_controller_actuation_delay_seconds).
	Actuations map[string]float64
	Decisions  float64
	DelayMean  time.Duration
	// Requests counts the controller's API requests over Window by method
	// (rest_client_requests_total).
	Requests map[string]float64
	// Snapshots are the controller's telemetry snapshots over Window.
	Snapshots Snapshots
	// APIWrites counts the API server's write requests over Window, the
	// whole cluster's, by "resource[/subresource] VERB"; Events the
	// Events recorded since the start by "component reason", repeats
	// included.
	APIWrites, Events map[string]float64
	// Agents is the agent runner's figures, with Config.Agents.
	Agents *AgentsResult
	// Targets are the bounds checked.
	Targets Targets
}

// AgentsResult is the agent runner's share of a run with agents, over its
// own window (read right after the controller's ends).
type AgentsResult struct {
	Window time.Duration
	// Hosted is the number of agents at the end.
	Hosted float64
	// CPU is the runner's average CPU in cores and CPUPeak its busiest
	// second; Training the share of a core spent holding a training slot
	// (wall time, aware_agents_training_seconds), and Acting the rest:
	// observing, inference, writing recommendations, checkpoints.
	CPU, CPUPeak, Training, Acting float64
	// RSSMax, HWM and LiveHeap are the runner's, as for the controller.
	RSSMax, HWM, LiveHeap uint64
	// Steps and Updates by stage, Withheld by reason, over the window.
	Steps, Updates, Withheld map[string]float64
	// UpdatesPerSecond is the training throughput.
	UpdatesPerSecond float64
	// Errors counts failed agent cycles; Episodes finished episodes.
	Errors, Episodes float64
	// Snapshots are the runner's own telemetry snapshots.
	Snapshots Snapshots
}

// Snapshots counts one process's telemetry snapshots (one set of PromQL
// queries for every pod, normally one per round): taken, failed, late
// (taken more than a window after their round ended: a reader asked for a
// round the process no longer kept), and their mean duration.
type Snapshots struct {
	Taken, Failed, Late float64
	Mean                time.Duration
}

func (s Snapshots) String() string {
	return fmt.Sprintf("%.0f taken, %.0f failed, %.0f late, mean %s", s.Taken, s.Failed, s.Late, dur(s.Mean))
}

// Pressure is the kernel's pressure stall information over a window: the
// share of it in which at least one task waited for CPU, for I/O.
type Pressure struct{ CPU, IO float64 }

// ProcessCPU is one process's (or same-named processes') CPU in cores.
type ProcessCPU struct {
	Name  string
	Cores float64
}

// Setup is how long each preparation stage took.
type Setup struct {
	// Cluster is the control plane's start; Objects creating the CRD, RBAC
	// and the applications' objects; Pods until every pod ran; Warmup from
	// the controller's start until every MPA had a recommendation on
	// fresh metrics, or until Allowance passed.
	Cluster, Objects, Pods, Warmup time.Duration
	// Allowance is the longest the warm-up may take; Ready the MPAs with a
	// recommendation (from their agent, with agents) on fresh metrics when
	// it ended. A warm-up that runs out of its allowance is a missed check,
	// and the rounds are measured all the same.
	Allowance time.Duration
	Ready     int
}

// Check is one figure against its target.
type Check struct {
	Figure, Measured, Target string
	OK                       bool
	key                      string // which figure, for WriteTable
}

// Check keys beside the rounds'.
const (
	keyWarmup     = "warmup"
	keyRound      = "round"
	keyCPU        = "cpu"
	keyRSS        = "rss"
	keyHWM        = "hwm"
	keyErrors     = "errors"
	keyRefused    = "refused"
	keyActing     = "acting"
	keyAgentsHWM  = "agents-hwm"
	keyAgentsErrs = "agents-errors"
)

// Checks are the figures with a target: the warm-up, every round, CPU,
// RSS (sampled and peak) and the errors in the window.
func (r Result) Checks() []Check {
	t := r.Targets
	ready := "with a recommendation on fresh metrics"
	if r.Agents != nil {
		ready = "with a recommendation from its agent on fresh metrics"
	}
	out := []Check{{key: keyWarmup, Figure: "warm-up: MPAs " + ready,
		Measured: fmt.Sprintf("%d/%d after %s", r.Setup.Ready, r.Apps, dur(r.Setup.Warmup)),
		Target:   fmt.Sprintf("%d/%d within %s", r.Apps, r.Apps, dur(r.Setup.Allowance)),
		OK:       r.Apps > 0 && r.Setup.Ready == r.Apps}}
	for i, rd := range r.Rounds {
		out = append(out, Check{key: keyRound,
			Figure:   fmt.Sprintf("round %d (T=%s), last MPA", i+1, rd.Start.UTC().Format("15:04:05")),
			Measured: roundMeasured(rd),
			Target:   "≤ " + t.Round.String(),
			OK:       rd.Complete && rd.Duration <= t.Round,
		})
	}
	if len(r.Rounds) == 0 {
		out = append(out, Check{key: keyRound, Figure: "rounds", Measured: "none measured", Target: "≤ " + t.Round.String()})
	}
	out = append(out,
		Check{key: keyCPU, Figure: fmt.Sprintf("controller CPU, average over %s", dur(r.Window)), Measured: fmt.Sprintf("%.3f cores", r.CPU),
			Target: fmt.Sprintf("≤ %g core", t.CPU), OK: r.Window > 0 && r.CPU <= t.CPU},
		Check{key: keyRSS, Figure: "controller RSS, max sampled every 1s", Measured: mib(r.RSSMax), Target: "≤ " + mib(t.RSS), OK: r.RSSMax > 0 && r.RSSMax <= t.RSS},
		Check{key: keyHWM, Figure: "controller RSS peak (VmHWM)", Measured: mib(r.HWM), Target: "≤ " + mib(t.RSS), OK: r.HWM > 0 && r.HWM <= t.RSS},
		Check{key: keyErrors, Figure: "controller errors in the window", Measured: countsBy(r.Errors, "0"), Target: "0", OK: sum(r.Errors) == 0},
		Check{key: keyRefused, Figure: "requests refused by RBAC since start (audit log)", Measured: refusedMeasured(r), Target: "0", OK: r.Refused == 0},
	)
	if a := r.Agents; a != nil {
		out = append(out,
			Check{key: keyActing, Figure: "agent runner CPU acting (besides training), average", Measured: fmt.Sprintf("%.3f cores", a.Acting),
				Target: fmt.Sprintf("≤ %g core", t.AgentsActing), OK: a.Window > 0 && a.Acting <= t.AgentsActing},
			Check{key: keyAgentsHWM, Figure: "controller + agent runner RSS peak (VmHWM)", Measured: mib(r.HWM + a.HWM), Target: "≤ " + mib(t.AgentsRSS),
				OK: a.HWM > 0 && r.HWM+a.HWM <= t.AgentsRSS},
			Check{key: keyAgentsErrs, Figure: "agent runner failed cycles in the window", Measured: fmt.Sprintf("%.0f", a.Errors), Target: "0", OK: a.Errors == 0},
		)
	}
	return out
}

func refusedMeasured(r Result) string {
	if r.Refused == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (first: %s)", r.Refused, r.FirstRefused)
}

// Missed lists the figures whose target was missed (nil: all met).
func (r Result) Missed() []string {
	var out []string
	for _, c := range r.Checks() {
		if !c.OK {
			out = append(out, c.Figure+": "+c.Measured+", target "+c.Target)
		}
	}
	return out
}

// WriteTable writes r as a plain-text table: figure, measured, target, ok.
func WriteTable(w io.Writer, r Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(fig, measured, target, ok string) { fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", fig, measured, target, ok) }
	row("figure", "measured", "target", "ok")
	if r.Agents != nil {
		row("apps, one MPA each (AWARE agents, ONLINE)", fmt.Sprint(r.Apps), "-", "-")
	} else {
		row("apps, one MPA each (default recommender)", fmt.Sprint(r.Apps), "-", "-")
	}
	row("kwok nodes", fmt.Sprint(r.Nodes), "-", "-")
	row("pods Running, Pending at the end", fmt.Sprintf("%d, %d", r.Pods, r.Pending), "-", "-")
	row("  Running pods with a resize not yet reported by kwok", strconv.Itoa(r.Resizing), "-", "-")
	row("MPAs with MetricsAvailable=True at the end", fmt.Sprintf("%d/%d", r.WithMetrics, r.Apps), "-", "-")
	for _, w := range r.WithoutMetrics {
		row("  without fresh metrics", w, "-", "-")
	}
	row("controller step", r.Step.String(), "-", "-")
	row("setup: control plane, objects, pods, warm-up", fmt.Sprintf("%s, %s, %s, %s",
		dur(r.Setup.Cluster), dur(r.Setup.Objects), dur(r.Setup.Pods), dur(r.Setup.Warmup)), "-", "-")
	checks := r.Checks()
	rows := func(keys ...string) {
		for _, c := range checks {
			if slices.Contains(keys, c.key) {
				row(c.Figure, c.Measured, c.Target, yes(c.OK))
			}
		}
	}
	rows(keyWarmup, keyRound)
	if len(r.Rounds) > 0 {
		p50, p95, longest, n := roundQuantiles(r.Rounds)
		fig := fmt.Sprintf("complete rounds p50, p95, max (%d of %d)", n, len(r.Rounds))
		if n == 0 {
			row(fig, "no round had every MPA step", "≤ "+r.Targets.Round.String(), yes(false))
		} else {
			row(fig, fmt.Sprintf("%s, %s, %s", dur(p50), dur(p95), dur(longest)), "≤ "+r.Targets.Round.String(), yes(longest <= r.Targets.Round && n == len(r.Rounds)))
		}
	}
	rows(keyCPU)
	row("controller CPU, busiest second", fmt.Sprintf("%.3f cores", r.CPUPeak), "-", "-")
	row("machine CPU busy in the window", fmt.Sprintf("%.2f of %d cores", r.HostCPU, r.HostCores), "-", "-")
	for _, p := range r.Processes {
		row("  of which "+p.Name, fmt.Sprintf("%.2f cores", p.Cores), "-", "-")
	}
	if p := r.Pressure; p != nil {
		row("machine pressure: some task waiting for CPU, for I/O", fmt.Sprintf("%.1f %%, %.1f %% of the window", 100*p.CPU, 100*p.IO), "-", "-")
	}
	rows(keyRSS, keyHWM)
	row("controller live heap at the end (go_gc_heap_live_bytes)", mib(r.LiveHeap), "-", "-")
	rows(keyErrors)
	row("controller errors since start (warm-up included)", countsBy(r.ErrorsTotal, "0"), "-", "-")
	rows(keyRefused)
	row("MPA steps in the window, mean duration", fmt.Sprintf("%.0f, %s", r.Steps, dur(r.StepMean)), "-", "-")
	if len(r.Phases) > 0 {
		row("  mean step phase (observe includes the snapshot wait)", phases(r.Phases), "-", "-")
	}
	row("decisions applied, mean wait; changes by kind", fmt.Sprintf("%.0f, %s; %s", r.Decisions, dur(r.DelayMean), countsBy(r.Actuations, "none")), "-", "-")
	perSec := 0.0
	if r.Window > 0 {
		perSec = sum(r.Requests) / r.Window.Seconds()
	}
	row("API requests in the window", fmt.Sprintf("%s (%.1f/s)", countsBy(r.Requests, "0"), perSec), "-", "-")
	row("controller's Prometheus snapshots in the window", r.Snapshots.String(), "-", "-")
	row("API server writes in the window (all clients)", topCounts(r.APIWrites, 8, "not measured"), "-", "-")
	row("Events since the start by source and reason", topCounts(r.Events, 8, "none"), "-", "-")
	if a := r.Agents; a != nil {
		row(fmt.Sprintf("agent runner: agents hosted; CPU over %s, busiest second", dur(a.Window)),
			fmt.Sprintf("%.0f; %.3f cores, %.3f cores", a.Hosted, a.CPU, a.CPUPeak), "-", "-")
		row("agent runner CPU training (time holding a training slot)", fmt.Sprintf("%.3f cores", a.Training), "-", "-")
		rows(keyActing, keyAgentsHWM, keyAgentsErrs)
		row("agent runner RSS, max sampled every 1s", mib(a.RSSMax), "-", "-")
		row("agent runner live heap at the end (go_gc_heap_live_bytes)", mib(a.LiveHeap), "-", "-")
		row("agent steps by stage; episodes", fmt.Sprintf("%s; %.0f", countsBy(a.Steps, "0"), a.Episodes), "-", "-")
		row("agent updates by stage (per second)", fmt.Sprintf("%s (%.1f/s)", countsBy(a.Updates, "0"), a.UpdatesPerSecond), "-", "-")
		row("agent recommendations withheld by reason", countsBy(a.Withheld, "0"), "-", "-")
		row("agent runner's snapshots (the controller's with --snapshots-from)", a.Snapshots.String(), "-", "-")
	}
	return tw.Flush()
}

// roundQuantiles are the p50, p95 and longest duration of the complete
// rounds (every MPA stepped), and how many there were. An incomplete
// round's duration says little: the MPAs that missed it stepped in a later
// round.
func roundQuantiles(rounds []Round) (p50, p95, longest time.Duration, n int) {
	var d []time.Duration
	for _, rd := range rounds {
		if rd.Reported && rd.Complete {
			d = append(d, rd.Duration)
		}
	}
	if len(d) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(d)
	return d[quantile.NearestRankIndex(len(d), 0.5)], d[quantile.NearestRankIndex(len(d), 0.95)], d[len(d)-1], len(d)
}

func roundMeasured(rd Round) string {
	if !rd.Reported {
		return "not reported (the controller finished no later round in time)"
	}
	s := fmt.Sprintf("%s (%d/%d MPA steps; status written %d, unchanged %d)", dur(rd.Duration), rd.Steps, rd.Want, rd.Written, rd.Unchanged)
	if !rd.Complete {
		s = fmt.Sprintf("incomplete: %d MPAs missed it; ", rd.Want-rd.Steps) + s
	}
	return s
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// countsBy is "total (k1 v1, k2 v2)" in key order, or zero.
func countsBy(m map[string]float64, zero string) string {
	return formatCounts(m, slices.Sorted(maps.Keys(m)), 0, zero)
}

// topCounts is "total (k1 v1, k2 v2, …)" with the n largest counts in
// decreasing order and the rest as "other", or zero.
func topCounts(m map[string]float64, n int, zero string) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	rest := 0.0
	for _, k := range keys[min(n, len(keys)):] {
		rest += m[k]
	}
	return formatCounts(m, keys[:min(n, len(keys))], rest, zero)
}

// formatCounts is "total (k1 v1, …, other rest)" for keys of m (an empty
// key named "?"), or zero when m counts nothing.
func formatCounts(m map[string]float64, keys []string, rest float64, zero string) string {
	if sum(m) == 0 {
		return zero
	}
	parts := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", cmp.Or(k, "?"), m[k]))
	}
	if rest > 0 {
		parts = append(parts, fmt.Sprintf("other %.0f", rest))
	}
	return fmt.Sprintf("%.0f (%s)", sum(m), strings.Join(parts, ", "))
}

// dur rounds d to three significant digits or so.
func dur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(10 * time.Microsecond).String()
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// phases is "observe 1.2s, record 3ms, status 270ms": the step's phases in
// the order a step runs them, others after in name order.
func phases(m map[string]time.Duration) string {
	order := []string{"observe", "record", "status"}
	rank := func(k string) int {
		if i := slices.Index(order, k); i >= 0 {
			return i
		}
		return len(order)
	}
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + dur(m[k])
	}
	return strings.Join(parts, ", ")
}
