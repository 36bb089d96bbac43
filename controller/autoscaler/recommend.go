package autoscaler

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
)

// admit reads m's spec and, for a spec this controller has not stepped
// (a new MPA, a new generation), builds its recommender; false when the
// spec is invalid (m's conditions say why).
func (r *Reconciler) admit(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, st *mpaState, now time.Time, log *slog.Logger) (Policy, bool) {
	pol, err := PolicyOf(m)
	if err != nil {
		r.setCondition(m, v1alpha1.ConditionAbleToScale, false, "InvalidSpec", err.Error())
		r.event(m, corev1.EventTypeWarning, "InvalidSpec", err.Error())
		return Policy{}, false
	}
	if st.rec != nil && st.gen == m.Generation {
		return pol, true
	}
	if err := r.rebuild(ctx, m, pol, st, now, log); err != nil {
		r.setCondition(m, v1alpha1.ConditionAbleToScale, false, "InvalidSpec", err.Error())
		return Policy{}, false
	}
	return pol, true
}

// rebuild builds st's recommender for a new spec (bounds, targets,
// behaviour, recommender). The built-in HPA+VPA keeps what the old one
// learnt, as upstream VPA keeps its histograms and HPA its recommendation
// history when their object changes: the workload's usage did not change
// with the spec. A first one is restored from the MPA's checkpoint
// (WithCheckpoints). Any other recommender starts afresh.
func (r *Reconciler) rebuild(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol Policy, st *mpaState, now time.Time, log *slog.Logger) error {
	var learnt *mpa.State
	if b := st.builtin(); b != nil {
		s := b.State()
		learnt = &s
	}
	rec, err := r.newRecommender(pol)
	if err != nil {
		st.rec = nil
		return err
	}
	st.rec, st.start = rec, now
	b := st.builtin()
	switch {
	case learnt != nil && b != nil:
		// Restored, its steps (and stepsBase) go on.
		if err := b.Restore(*learnt); err != nil {
			log.Info("spec changed; the recommender starts afresh", "err", err)
			st.stepsBase = 0
		}
	default:
		st.stepsBase = 0 // restoreCheckpoint moves it to the checkpoint's
		if r.cfg.ckptEvery > 0 && b != nil {
			r.restoreCheckpoint(ctx, m, st, log)
		}
	}
	return nil
}

// newRecommender builds the recommender registered under the policy's
// name; an external (unregistered) name gets the default one, the fallback
// that acts while the external recommender does not.
func (r *Reconciler) newRecommender(p Policy) (recommender.Recommender, error) {
	f, ok := FindRecommender(p.Recommender)
	if !ok {
		f = defaultRecommender
	}
	rec, err := f.New(RecommenderConfig{Policy: p, Step: r.simulated(r.cfg.step), VPAInterval: r.cfg.vpaInterval})
	if err == nil && rec == nil {
		err = fmt.Errorf("recommender %q built nothing", f.Name)
	}
	return rec, err
}

// simulated is the simulated time that passes in wall time d
// (WithTimeScale), to the nanosecond.
func (r *Reconciler) simulated(d time.Duration) time.Duration {
	if r.cfg.timeScale == 1 {
		return d
	}
	return time.Duration(math.Round(float64(d) * r.cfg.timeScale))
}

// builtin is st's recommender when it is the built-in HPA+VPA (the
// default, the fallback of an external recommender, or a registered one
// that is an *mpa.MPA): the one whose learning the controller keeps across
// specs and in checkpoints; nil otherwise.
func (st *mpaState) builtin() *mpa.MPA {
	b, _ := st.rec.(*mpa.MPA)
	return b
}

// decision is the recommendation in force at a step: replicas and the
// scaled container's resources (ok false: there is none, an external
// recommender's being stale or absent), and whether it is an external
// recommender's (agent: its per-step limits and resize threshold apply).
type decision struct {
	replicas int32
	res      Resources
	ok       bool
	agent    bool
}

// recommend is the recommend phase: the MPA's own recommender recommends
// (at every step, so that as a fallback it is warm whenever it has to
// act), its checkpoint is written when due, and choose decides whose
// recommendation is in force.
func (r *Reconciler) recommend(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol Policy, st *mpaState, o *observed, now time.Time, log *slog.Logger) decision {
	obs := recommender.Observation{
		Time: r.simulated(now.Sub(st.start)) + r.simulated(r.cfg.step), Current: ToAllocation(o.scale.Spec.Replicas, o.cur),
		ReadyReplicas: o.met.ReadyReplicas, CPUUsage: o.met.CPUUsage, MemoryUsage: o.met.MemoryUsage,
		MemoryPeak: o.met.MemoryPeak, OOMKills: o.met.OOMKills, ArrivalRate: o.met.ArrivalRate,
		ProcessedRate: o.met.ProcessedRate, LatencyP99: o.met.LatencyP99,
	}
	own := st.rec.Recommend(obs)
	r.cfg.metrics.recommendations.Inc()
	r.checkpointIfDue(ctx, m, st, now, log)
	return r.choose(m, pol, st, o, own, now)
}

// choose decides whose recommendation acts at this step and says so in m's
// status: an external recommender's while it may act (the MPA names one,
// and its agent, if any, is in an acting stage) and has written a fresh
// one it did not withhold; else own, the MPA's own recommender's.
func (r *Reconciler) choose(m *v1alpha1.MultidimPodAutoscaler, pol Policy, st *mpaState, o *observed, own recommender.Allocation, now time.Time) decision {
	agentActs := pol.External() && (pol.Agent == nil || AgentActs(m.Status.Agent.Stage))
	// An external recommender that withholds its recommendation (a fresh
	// status.recommendation.withheld) hands this step to the fallback.
	withheld := agentActs && r.withheld(m.Status.Recommendation, st, now)
	var d decision
	// status.recommendation is the recommendation in force: the
	// controller's own whenever it acts (an external agent writes its own
	// while it acts, and its withheld marker stays for it to replace).
	if !agentActs {
		if rec := ownRecommendation(st.rec, own, o.container, now); !sameRecommendation(m.Status.Recommendation, rec) {
			m.Status.Recommendation = rec
		}
	}
	if agentActs && !withheld {
		d.replicas, d.res, d.ok = r.externalRecommendation(m, st, o.container, o.cur, now)
		if d.ok {
			// The recommender waits for this to know its recommendation
			// was taken.
			if t := m.Status.Recommendation.Time; !t.Equal(m.Status.AppliedRecommendationTime) {
				m.Status.AppliedRecommendationTime = t.DeepCopy()
			}
		} else {
			msg := fmt.Sprintf("recommender %q has not written a recommendation in the last %d steps; holding", pol.Recommender, r.cfg.maxRecAge)
			r.setCondition(m, v1alpha1.ConditionRecommendationProvided, false, ReasonNoFreshRecommendation, msg)
			// Counted per MPA (a study on the testbed reads its stale
			// actions from it) and an Event for the operator (Events are
			// rate-limited: not a count).
			r.cfg.metrics.stale.WithLabelValues(m.Namespace, m.Name, holdCause(m, pol)).Inc()
			r.event(m, corev1.EventTypeWarning, ReasonNoFreshRecommendation, msg)
		}
	} else {
		d.replicas, d.res, d.ok = int32(own.Replicas), Resources{CPU: own.CPU, Memory: own.Memory}, true
	}
	switch {
	case withheld:
		w := m.Status.Recommendation.Withheld
		r.cfg.metrics.withheld.WithLabelValues(w.Reason).Inc()
		r.setCondition(m, v1alpha1.ConditionRecommendationProvided, false, w.Reason,
			fmt.Sprintf("recommender %q withheld its recommendation (%s); acting on hpa+vpa for this step", pol.Recommender, w.Message))
		agentActs = false // bounds and in-place rules of the fallback
	case d.ok:
		who := pol.Recommender
		if !agentActs {
			who = st.rec.Name()
		}
		r.setCondition(m, v1alpha1.ConditionRecommendationProvided, true, "RecommendationApplied", "acting on the recommendation of "+who)
	}
	d.agent = agentActs
	return d
}

// ownRecommendation is the status recommendation of the MPA's own
// recommender rec, with the VPA's bounds when it is the built-in HPA+VPA
// and its VPA has them.
func ownRecommendation(rec recommender.Recommender, a recommender.Allocation, container string, now time.Time) *v1alpha1.RecommendedPodResources {
	t := metav1.NewTime(now)
	replicas := int32(a.Replicas)
	cr := v1alpha1.RecommendedContainerResources{ContainerName: container, Target: ResourceList(Round(Resources{CPU: a.CPU, Memory: a.Memory}))}
	if b, ok := rec.(*mpa.MPA); ok {
		if v, ok := b.VPA().Recommendation(); ok {
			cr.LowerBound = ResourceList(Round(Resources{CPU: v.LowerBound.CPU, Memory: v.LowerBound.Memory}))
			cr.UpperBound = ResourceList(Round(Resources{CPU: v.UpperBound.CPU, Memory: v.UpperBound.Memory}))
			cr.UncappedTarget = ResourceList(Round(Resources{CPU: v.UncappedTarget.CPU, Memory: v.UncappedTarget.Memory}))
		}
	}
	return &v1alpha1.RecommendedPodResources{Replicas: &replicas, Recommender: rec.Name(), Time: &t,
		ContainerRecommendations: []v1alpha1.RecommendedContainerResources{cr}}
}

// sameRecommendation says whether a and b recommend the same, whenever
// they were made (a recommendation's time moves only when it changes, as
// upstream VPA writes its recommendation only when it changed).
func sameRecommendation(a, b *v1alpha1.RecommendedPodResources) bool {
	if a == nil || b == nil {
		return a == b
	}
	a, b = a.DeepCopy(), b.DeepCopy()
	a.Time, b.Time = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// withheld says whether rec is a fresh withheld marker of an external
// recommender.
func (r *Reconciler) withheld(rec *v1alpha1.RecommendedPodResources, st *mpaState, now time.Time) bool {
	return rec != nil && rec.Withheld != nil && rec.Time != nil && r.fresh(rec.Time.Time, st, now)
}

// fresh says whether an external recommendation written at t may be acted
// on at now: it is younger than maxRecAge steps, or this controller has
// stepped the MPA fewer than maxRecAge times since it was written. A
// controller behind its rounds (at 1000 MPAs on a loaded machine it reached
// each MPA about every 40 s on a 15 s step) thus counts the age in the
// MPA's own steps, and acts on what the recommender wrote since its last
// visit instead of holding it as stale while the recommender waits. A
// recommendation older than this controller's first step of the MPA (a
// restarted controller) is judged by its age alone.
func (r *Reconciler) fresh(t time.Time, st *mpaState, now time.Time) bool {
	if now.Sub(t) <= time.Duration(r.cfg.maxRecAge)*r.cfg.step {
		return true
	}
	if st.first.IsZero() || t.Before(st.first) {
		return false
	}
	since := 0
	for _, s := range st.steps {
		if s.After(t) {
			since++
		}
	}
	return since < r.cfg.maxRecAge
}

// stepped records a step of the MPA at now, keeping the last n.
func (s *mpaState) stepped(now time.Time, n int) {
	if s.first.IsZero() {
		s.first = now
	}
	if len(s.steps) == n {
		s.steps = append(s.steps[:0], s.steps[1:]...)
	}
	s.steps = append(s.steps, now)
}

// Causes of a step held for want of a fresh external recommendation.
const (
	// HoldAwaitingFirst: the recommender has written none since the agent
	// entered its acting stage (the agent runner has not reacted to the
	// stage change yet).
	HoldAwaitingFirst = "first"
	// HoldApplied: its last one, already applied, stays in force while
	// the recommender waits to observe its effect (an agent of
	// controller/mpaenv waits for the actuation and a whole step after
	// it): the agent's own pace, no action lost.
	HoldApplied = "applied"
	// HoldStale: its last one, written in this stage, grew too old before
	// this controller applied it: an action lost.
	HoldStale = "stale"
)

// holdCause tells why m holds for want of a fresh external
// recommendation: none written by the recommender in the current stage,
// its last one applied and still in force, or one that grew too old before
// it was applied.
func holdCause(m *v1alpha1.MultidimPodAutoscaler, pol Policy) string {
	rec := m.Status.Recommendation
	if rec == nil || rec.Time == nil || rec.Recommender != pol.Recommender {
		return HoldAwaitingFirst
	}
	if ag := m.Status.Agent; ag != nil && ag.StageTime != nil && rec.Time.Before(ag.StageTime) {
		return HoldAwaitingFirst
	}
	if at := m.Status.AppliedRecommendationTime; at != nil && rec.Time.Equal(at) {
		return HoldApplied
	}
	return HoldStale
}

// externalRecommendation reads what an external recommender wrote; stale
// or absent recommendations are not used.
func (r *Reconciler) externalRecommendation(m *v1alpha1.MultidimPodAutoscaler, st *mpaState, container string, cur Resources, now time.Time) (int32, Resources, bool) {
	rec := m.Status.Recommendation
	if rec == nil || rec.Time == nil || !r.fresh(rec.Time.Time, st, now) {
		return 0, Resources{}, false
	}
	replicas := m.Status.CurrentReplicas
	if rec.Replicas != nil {
		replicas = *rec.Replicas
	}
	res, _ := Recommended(rec, container, cur)
	return replicas, res, true
}
