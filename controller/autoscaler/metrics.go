package autoscaler

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the controller's own Prometheus metrics.
type Metrics struct {
	recommendations prometheus.Counter
	decisions       *prometheus.CounterVec
	actuation       *prometheus.HistogramVec
	errors          *prometheus.CounterVec
	reconcile       prometheus.Histogram
	actuationDelay  prometheus.Histogram
	reward          *prometheus.GaugeVec
	episodeReward   *prometheus.GaugeVec
	stage           *prometheus.GaugeVec
	transitions     *prometheus.CounterVec
	withheld        *prometheus.CounterVec
	statusWrites    *prometheus.CounterVec
	round           prometheus.Histogram
	lastRound       *prometheus.GaugeVec
	phase           *prometheus.HistogramVec
	recorded        prometheus.Counter
	abandoned       prometheus.Counter
	stale           *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		recommendations: prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_controller_recommendations_total",
			Help: "Recommendations computed (one per MPA step with fresh metrics)."}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_controller_actuations_total",
			Help: "Changes applied, by kind: replicas (scale subresource), resize (in place), template (rolling update)."}, []string{"kind"}),
		actuation: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "aware_controller_actuation_seconds",
			Help: "Latency of an actuation API call, by kind.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_controller_errors_total",
			Help: "Failures, by where: observe, scale, resize, resize_refused, template, status, store, checkpoint."}, []string{"where"}),
		reconcile: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "aware_controller_step_seconds",
			Help: "Duration of one MPA step.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		actuationDelay: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "aware_controller_actuation_delay_seconds",
			Help: "Time from a step's decision until the updater starts applying it.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		reward: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "aware_controller_step_reward",
			Help: "Reward of the last step, per MPA."}, []string{"namespace", "name"}),
		episodeReward: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "aware_controller_recent_episode_reward",
			Help: "Mean reward of the recent complete episodes, per MPA."}, []string{"namespace", "name"}),
		stage: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "aware_controller_agent_stage",
			Help: "1 for the agent's current lifecycle stage, per MPA."}, []string{"namespace", "name", "stage"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_controller_stage_transitions_total",
			Help: "Agent lifecycle transitions, by the stage left and the stage entered (ONLINE entered from SERVING: the retraining detector fired)."}, []string{"from", "to"}),
		withheld: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_controller_withheld_recommendations_total",
			Help: "Steps an external recommender withheld its recommendation and HPA+VPA acted instead, by the recommender's reason."}, []string{"reason"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_controller_status_writes_total",
			Help: "MPA steps by what became of their status: written (it changed) or unchanged (no API call)."}, []string{"result"}),
		round: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "aware_controller_round_seconds",
			Help:    "Duration of a round: from its start (a multiple of the step) until its last MPA step finished.",
			Buckets: prometheus.ExponentialBuckets(0.01, 1.5, 20)}),
		lastRound: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "aware_controller_last_round",
			Help: "The last complete round, by field: start (Unix seconds), seconds (its duration), steps (MPA steps) and written (of which wrote status)."}, []string{"field"}),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "aware_controller_step_phase_seconds",
			Help:    "Duration of a phase of an MPA step, by phase: observe (metrics, including the wait for the round's Prometheus snapshot), record (trajectory store and lifecycle), status (the status write, when it changed).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"phase"}),
		recorded: prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_controller_trajectory_steps_total",
			Help: "Trajectory steps the store accepted (durable or journalled when counted)."}),
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{Name: "aware_controller_trajectory_episodes_abandoned_total",
			Help: "Episodes left incomplete because the store was out of step with the controller (steps lost before they became durable)."}),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aware_controller_stale_recommendation_steps_total",
			Help: "Steps the MPA held for want of a fresh recommendation of its acting external recommender (RecommendationProvided=False, NoFreshRecommendation), per MPA and cause: first (none written since the agent's stage began), applied (the last one applied and in force while the recommender waits to observe it) or stale (the last one too old before it was applied: an action lost)."}, []string{"namespace", "name", "cause"}),
	}
	if reg != nil {
		reg.MustRegister(m.recommendations, m.decisions, m.actuation, m.errors, m.reconcile, m.actuationDelay, m.reward,
			m.episodeReward, m.stage, m.transitions, m.withheld, m.statusWrites, m.round, m.lastRound, m.phase, m.recorded, m.abandoned, m.stale)
	}
	return m
}

// forget drops the per-MPA series of a deleted MPA.
func (m *Metrics) forget(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "name": name}
	for _, v := range []*prometheus.GaugeVec{m.reward, m.episodeReward, m.stage} {
		v.DeletePartialMatch(l)
	}
	m.stale.DeletePartialMatch(l)
}

// roundTracker measures rounds: from a round's start (a multiple of the
// step) until its last MPA step finished, and how many steps it had,
// reported when the next round's first step finishes.
type roundTracker struct {
	mu             sync.Mutex
	round, last    time.Time
	steps, written int
}

func (t *roundTracker) stepped(round, end time.Time, wrote bool, m *Metrics) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case round.After(t.round):
		if !t.round.IsZero() {
			d := t.last.Sub(t.round).Seconds()
			m.round.Observe(d)
			m.lastRound.WithLabelValues("start").Set(float64(t.round.UnixNano()) / 1e9)
			m.lastRound.WithLabelValues("seconds").Set(d)
			m.lastRound.WithLabelValues("steps").Set(float64(t.steps))
			m.lastRound.WithLabelValues("written").Set(float64(t.written))
		}
		t.round, t.last, t.steps, t.written = round, end, 0, 0
		fallthrough
	case round.Equal(t.round):
		t.last = maxTime(t.last, end)
		t.steps++
		if wrote {
			t.written++
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
