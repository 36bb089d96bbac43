package autoscaler

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

func TestNextStage(t *testing.T) {
	p := v1alpha1.DefaultAgentProfile() // online 130, serving 100, variance 10, window 10
	noBoot := p
	noBoot.Bootstrap = ptr(false)
	serve := noBoot
	serve.StartServing = true
	rep := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	noisy := append(rep(80, 5), rep(140, 5)...) // mean 110, std 30
	tests := []struct {
		name    string
		p       v1alpha1.AgentProfile
		cur     v1alpha1.AgentStage
		rewards []float64
		want    v1alpha1.AgentStage
	}{
		{"initialized bootstraps", p, v1alpha1.StageInitialized, nil, v1alpha1.StageOffline},
		{"empty stage bootstraps", p, "", nil, v1alpha1.StageOffline},
		{"initialized without bootstrap", noBoot, v1alpha1.StageInitialized, nil, v1alpha1.StageOnline},
		{"initialized, starts serving", serve, v1alpha1.StageInitialized, nil, v1alpha1.StageServing},
		{"empty stage, starts serving", serve, "", nil, v1alpha1.StageServing},
		{"started serving, degrades", serve, v1alpha1.StageServing, rep(99, 10), v1alpha1.StageOnline},
		{"window not full", p, v1alpha1.StageOffline, rep(200, 9), v1alpha1.StageOffline},
		{"offline below threshold", p, v1alpha1.StageOffline, rep(129, 10), v1alpha1.StageOffline},
		{"offline to online", p, v1alpha1.StageOffline, rep(130, 10), v1alpha1.StageOnline},
		{"only the last window counts", p, v1alpha1.StageOffline, append(rep(0, 50), rep(131, 10)...), v1alpha1.StageOnline},
		{"online to serving", p, v1alpha1.StageOnline, rep(100, 10), v1alpha1.StageServing},
		{"online, too noisy to serve", p, v1alpha1.StageOnline, noisy, v1alpha1.StageOnline},
		{"serving stays", p, v1alpha1.StageServing, rep(120, 10), v1alpha1.StageServing},
		{"serving degrades", p, v1alpha1.StageServing, rep(99, 10), v1alpha1.StageOnline},
		{"serving turns noisy", p, v1alpha1.StageServing, noisy, v1alpha1.StageOnline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Default()
			assert.Equal(t, tt.want, NextStage(tt.cur, tt.p, tt.rewards))
		})
	}
	m, s := MeanStd(noisy)
	assert.Equal(t, 110.0, m)
	assert.Equal(t, 30.0, s)
	assert.True(t, AgentActs(v1alpha1.StageOnline) && AgentActs(v1alpha1.StageServing))
	assert.False(t, AgentActs(v1alpha1.StageOffline) || AgentActs(v1alpha1.StageInitialized))
}

func TestTransition(t *testing.T) {
	p := v1alpha1.DefaultAgentProfile() // online 130, serving 100, variance 10, window 10
	rep := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	noisy := append(rep(95, 5), rep(125, 5)...) // mean 110, std 15
	tests := []struct {
		cur, next        v1alpha1.AgentStage
		rewards          []float64
		reason, contains string
	}{
		{v1alpha1.StageInitialized, v1alpha1.StageOffline, nil, ReasonBootstrapping, "online threshold 130"},
		{"", v1alpha1.StageOnline, nil, ReasonNoBootstrapping, "from the first step"},
		{v1alpha1.StageInitialized, v1alpha1.StageServing, nil, ReasonStartServing, "falls below 100 or their std exceeds 10"},
		{v1alpha1.StageOffline, v1alpha1.StageOnline, rep(130, 10), ReasonRewardReachedOnline, "mean reward 130 (std 0) over the last 10 episodes reached the online threshold 130"},
		{v1alpha1.StageOnline, v1alpha1.StageServing, append(rep(0, 5), rep(100, 10)...), ReasonConverged, "mean reward 100 (std 0) over the last 10 episodes"},
		{v1alpha1.StageServing, v1alpha1.StageOnline, rep(99, 10), ReasonRewardDropped, "fell below the serving threshold 100"},
		{v1alpha1.StageServing, v1alpha1.StageOnline, noisy, ReasonRewardUnstable, "std 15"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			if tt.rewards != nil {
				assert.Equal(t, tt.next, NextStage(tt.cur, p, tt.rewards), "the case is a transition NextStage makes")
			}
			reason, msg := Transition(tt.cur, tt.next, p, tt.rewards)
			assert.Equal(t, tt.reason, reason)
			assert.Contains(t, msg, tt.contains)
		})
	}
}
