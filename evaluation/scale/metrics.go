package scale

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Names of the controller's metrics the benchmark reads
// (controller/autoscaler/metrics.go, and controller-runtime's client-go
// adapter for the API requests).
const (
	metricErrors          = "aware_controller_errors_total"
	metricStep            = "aware_controller_step_seconds"
	metricStepPhase       = "aware_controller_step_phase_seconds"
	metricRecommendations = "aware_controller_recommendations_total"
	metricActuations      = "aware_controller_actuations_total"
	metricActuationDelay  = "aware_controller_actuation_delay_seconds"
	metricRequests        = "rest_client_requests_total"
	metricLastRound       = "aware_controller_last_round"

	// The telemetry snapshots of the controller's and of the runner's
	// observer (controller/manager).
	metricSnapshots       = "aware_telemetry_snapshots_total"
	metricSnapshotSeconds = "aware_telemetry_snapshot_seconds"
	metricSnapshotsLate   = "aware_telemetry_snapshots_late_total"

	// The agent runner's (controller/agents).
	metricAgentSteps    = "aware_agents_steps_total"
	metricAgentUpdates  = "aware_agents_updates_total"
	metricAgentWithheld = "aware_agents_withheld_total"
	metricAgentErrors   = "aware_agents_errors_total"
	metricAgentTraining = "aware_agents_training_seconds"
	metricAgentEpisodes = "aware_agents_episodes_total"
	metricAgentsHosted  = "aware_agents_hosted"

	// The Go runtime's live heap after the last collection (either
	// process): what a process needs, where its RSS follows the soft
	// memory limit the collector lets the heap grow to.
	metricLiveHeap = "go_gc_heap_live_bytes"
)

// counters are the controller's counters at one moment.
type counters struct {
	// Errors by "where" (observe, scale, resize, status, store, …).
	Errors map[string]float64
	// Steps and StepSeconds are the count and sum of the step-duration
	// histogram.
	Steps, StepSeconds float64
	// PhaseCount and PhaseSeconds are the count and sum of the step-phase
	// histogram by phase (observe, record, status).
	PhaseCount, PhaseSeconds map[string]float64
	// Recommendations computed.
	Recommendations float64
	// Requests to the API server by method.
	Requests map[string]float64
	// Actuations applied by kind (replicas, resize, template);
	// Decisions and DelaySeconds are the count and sum of the updater's
	// delay histogram (decisions it started applying).
	Actuations              map[string]float64
	Decisions, DelaySeconds float64
	// LastRound is the controller's last complete round by field (start
	// in Unix seconds, seconds, steps, written): a gauge, not a counter.
	LastRound map[string]float64
	// Snapshots counts the observer's telemetry snapshots by result;
	// SnapshotsTimed and SnapshotSeconds are the count and sum of their
	// duration histogram.
	// SnapshotsLate counts those taken more than a window after their
	// round ended.
	Snapshots                                      map[string]float64
	SnapshotsTimed, SnapshotSeconds, SnapshotsLate float64

	// The agent runner's: acting steps and training updates by stage,
	// withheld recommendations by reason, failed cycles, episodes, and
	// the count and sum of the time holding a training slot.
	AgentSteps, AgentUpdates, AgentWithheld map[string]float64
	AgentErrors, AgentEpisodes              float64
	Trainings, TrainingSeconds              float64
	// AgentsHosted is the runner's number of agents (a gauge).
	AgentsHosted float64
	// LiveHeap is the process's live heap in bytes (a gauge).
	LiveHeap float64
}

// since is c minus an earlier c0: what happened in between.
func (c counters) since(c0 counters) counters {
	return counters{
		Errors: diff(c.Errors, c0.Errors), Steps: c.Steps - c0.Steps, StepSeconds: c.StepSeconds - c0.StepSeconds,
		PhaseCount: diff(c.PhaseCount, c0.PhaseCount), PhaseSeconds: diff(c.PhaseSeconds, c0.PhaseSeconds),
		Recommendations: c.Recommendations - c0.Recommendations, Requests: diff(c.Requests, c0.Requests),
		Actuations: diff(c.Actuations, c0.Actuations), Decisions: c.Decisions - c0.Decisions, DelaySeconds: c.DelaySeconds - c0.DelaySeconds,
		LastRound: c.LastRound,
		Snapshots: diff(c.Snapshots, c0.Snapshots), SnapshotsTimed: c.SnapshotsTimed - c0.SnapshotsTimed,
		SnapshotSeconds: c.SnapshotSeconds - c0.SnapshotSeconds, SnapshotsLate: c.SnapshotsLate - c0.SnapshotsLate,
		AgentSteps: diff(c.AgentSteps, c0.AgentSteps), AgentUpdates: diff(c.AgentUpdates, c0.AgentUpdates),
		AgentWithheld: diff(c.AgentWithheld, c0.AgentWithheld), AgentErrors: c.AgentErrors - c0.AgentErrors,
		AgentEpisodes: c.AgentEpisodes - c0.AgentEpisodes,
		Trainings:     c.Trainings - c0.Trainings, TrainingSeconds: c.TrainingSeconds - c0.TrainingSeconds,
		AgentsHosted: c.AgentsHosted, LiveHeap: c.LiveHeap,
	}
}

// diff is the counters a minus the earlier b, keys whose count did not
// change left out.
func diff(a, b map[string]float64) map[string]float64 {
	out := maps.Clone(a)
	for k, v := range b {
		out[k] -= v
		if out[k] == 0 {
			delete(out, k)
		}
	}
	return out
}

func sum(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// scrapeCounters GETs url (the controller's /metrics) and reads counters;
// it also returns the exposition as scraped.
func scrapeCounters(ctx context.Context, hc *http.Client, url string) (counters, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return counters{}, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return counters{}, nil, fmt.Errorf("controller metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return counters{}, nil, fmt.Errorf("controller metrics %s: %s", url, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return counters{}, nil, fmt.Errorf("controller metrics %s: %w", url, err)
	}
	c, err := parseCounters(bytes.NewReader(raw))
	return c, raw, err
}

// parseCounters reads counters from the text exposition format; a metric
// that is absent (a counter vector nothing has incremented yet) is zero.
func parseCounters(r io.Reader) (counters, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return counters{}, fmt.Errorf("controller metrics: %w", err)
	}
	c := counters{Errors: map[string]float64{}, Requests: map[string]float64{}, Actuations: map[string]float64{},
		LastRound: map[string]float64{}, Snapshots: map[string]float64{}, PhaseCount: map[string]float64{}, PhaseSeconds: map[string]float64{}, AgentSteps: map[string]float64{}, AgentUpdates: map[string]float64{}, AgentWithheld: map[string]float64{}}
	byLabel := func(name, label string, into map[string]float64) {
		f := fams[name]
		if f == nil {
			return
		}
		for _, m := range f.GetMetric() {
			into[labelValue(m, label)] += m.GetCounter().GetValue()
		}
	}
	byLabel(metricErrors, "where", c.Errors)
	byLabel(metricRequests, "method", c.Requests)
	byLabel(metricActuations, "kind", c.Actuations)
	byLabel(metricSnapshots, "result", c.Snapshots)
	byLabel(metricAgentSteps, "stage", c.AgentSteps)
	byLabel(metricAgentUpdates, "stage", c.AgentUpdates)
	byLabel(metricAgentWithheld, "reason", c.AgentWithheld)
	if f := fams[metricLastRound]; f != nil {
		for _, m := range f.GetMetric() {
			c.LastRound[labelValue(m, "field")] = m.GetGauge().GetValue()
		}
	}
	histogram := func(name string, count, sum *float64) {
		if f := fams[name]; f != nil {
			for _, m := range f.GetMetric() {
				*count += float64(m.GetHistogram().GetSampleCount())
				*sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	histogram(metricStep, &c.Steps, &c.StepSeconds)
	if f := fams[metricStepPhase]; f != nil {
		for _, m := range f.GetMetric() {
			c.PhaseCount[labelValue(m, "phase")] += float64(m.GetHistogram().GetSampleCount())
			c.PhaseSeconds[labelValue(m, "phase")] += m.GetHistogram().GetSampleSum()
		}
	}
	histogram(metricActuationDelay, &c.Decisions, &c.DelaySeconds)
	histogram(metricAgentTraining, &c.Trainings, &c.TrainingSeconds)
	histogram(metricSnapshotSeconds, &c.SnapshotsTimed, &c.SnapshotSeconds)
	for name, into := range map[string]*float64{metricAgentsHosted: &c.AgentsHosted, metricLiveHeap: &c.LiveHeap} {
		if f := fams[name]; f != nil {
			for _, m := range f.GetMetric() {
				*into += m.GetGauge().GetValue()
			}
		}
	}
	for name, into := range map[string]*float64{metricRecommendations: &c.Recommendations, metricAgentErrors: &c.AgentErrors,
		metricAgentEpisodes: &c.AgentEpisodes, metricSnapshotsLate: &c.SnapshotsLate} {
		if f := fams[name]; f != nil {
			for _, m := range f.GetMetric() {
				*into += m.GetCounter().GetValue()
			}
		}
	}
	return c, nil
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// snapshots summarises the telemetry snapshots between two readings.
func (c counters) snapshots() Snapshots {
	return Snapshots{Taken: c.Snapshots["ok"], Failed: c.Snapshots["error"], Late: c.SnapshotsLate, Mean: mean(c.SnapshotSeconds, c.SnapshotsTimed)}
}

// phases is the mean duration of each step phase between two readings.
func (c counters) phases() map[string]time.Duration {
	out := map[string]time.Duration{}
	for p, n := range c.PhaseCount {
		out[p] = mean(c.PhaseSeconds[p], n)
	}
	return out
}

// mean is a histogram's mean duration from its sum in seconds and its
// count (0 when empty).
func mean(seconds, count float64) time.Duration {
	if count <= 0 {
		return 0
	}
	return time.Duration(seconds / count * float64(time.Second))
}
