package autoscaler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// beginLifecycle starts the agent's lifecycle in m's status: INITIALIZED
// moves on at once (Algorithm 1).
func (r *Reconciler) beginLifecycle(m *v1alpha1.MultidimPodAutoscaler, pol Policy, now time.Time) {
	if pol.Agent == nil {
		return
	}
	if m.Status.Agent == nil {
		m.Status.Agent = &v1alpha1.AgentStatus{Stage: v1alpha1.StageInitialized}
	}
	if next := NextStage(m.Status.Agent.Stage, *pol.Agent, nil); next != m.Status.Agent.Stage {
		r.setStage(m, next, *pol.Agent, nil, now)
	}
}

// endEpisode is the lifecycle at the end of an episode: the mean reward
// and spread of the recent complete episodes go to status.agent, and the
// agent moves to the stage Algorithm 1 gives them.
func (r *Reconciler) endEpisode(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol Policy, app string, now time.Time) error {
	ag := m.Status.Agent
	eps, err := r.store.RecentEpisodes(ctx, app, pol.Agent.Thresholds.Window)
	if err != nil {
		return fmt.Errorf("recent episodes of %s: %w", app, err)
	}
	rewards := make([]float64, len(eps))
	for i, e := range eps {
		rewards[i] = e.Reward
	}
	mean, std := MeanStd(rewards)
	ag.RecentReward, ag.RecentRewardStdDev = &mean, &std
	r.cfg.metrics.episodeReward.WithLabelValues(m.Namespace, m.Name).Set(mean)
	if next := NextStage(ag.Stage, *pol.Agent, rewards); next != ag.Stage {
		r.setStage(m, next, *pol.Agent, rewards, now)
	}
	return nil
}

// setStage moves the agent to stage s and says so three ways: an Event, the
// AgentServing condition (its reason and message from Transition) and the
// stage-transition counter.
func (r *Reconciler) setStage(m *v1alpha1.MultidimPodAutoscaler, s v1alpha1.AgentStage, p v1alpha1.AgentProfile, rewards []float64, now time.Time) {
	from := m.Status.Agent.Stage
	reason, msg := Transition(from, s, p, rewards)
	r.setCondition(m, v1alpha1.ConditionAgentServing, s == v1alpha1.StageServing, reason, msg)
	r.cfg.metrics.transitions.WithLabelValues(string(orInitialized(from)), string(s)).Inc()
	t := metav1.NewTime(now)
	m.Status.Agent.Stage, m.Status.Agent.StageTime = s, &t
	for _, st := range []v1alpha1.AgentStage{v1alpha1.StageInitialized, v1alpha1.StageOffline, v1alpha1.StageOnline, v1alpha1.StageServing} {
		v := 0.0
		if st == s {
			v = 1
		}
		r.cfg.metrics.stage.WithLabelValues(m.Namespace, m.Name, string(st)).Set(v)
	}
	r.event(m, corev1.EventTypeNormal, "StageChanged", fmt.Sprintf("agent stage %s → %s (%s): %s", orInitialized(from), s, reason, msg))
}

func orInitialized(s v1alpha1.AgentStage) v1alpha1.AgentStage {
	if s == "" {
		return v1alpha1.StageInitialized
	}
	return s
}
