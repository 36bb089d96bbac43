package autoscaler

import (
	"fmt"
	"math"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// NextStage is Algorithm 1 of the paper: the agent's stage after an episode
// ends, given the defaulted profile and the rewards of the most recent
// complete episodes (oldest first; only the last thresholds.window count).
// A window that is not yet full keeps the stage, except INITIALIZED, which
// moves at once to SERVING (a profile that starts serving), OFFLINE
// (bootstrapping) or ONLINE.
func NextStage(cur v1alpha1.AgentStage, p v1alpha1.AgentProfile, rewards []float64) v1alpha1.AgentStage {
	if cur == "" || cur == v1alpha1.StageInitialized {
		if p.StartServing {
			return v1alpha1.StageServing
		}
		if p.Bootstraps() {
			return v1alpha1.StageOffline
		}
		return v1alpha1.StageOnline
	}
	w := p.Thresholds.Window
	if len(rewards) < w {
		return cur
	}
	mean, std := MeanStd(rewards[len(rewards)-w:])
	t := p.Thresholds
	switch cur {
	case v1alpha1.StageOffline:
		if mean >= t.Online {
			return v1alpha1.StageOnline
		}
	case v1alpha1.StageOnline:
		if mean >= t.Serving && std <= t.Variance {
			return v1alpha1.StageServing
		}
	case v1alpha1.StageServing:
		if mean < t.Serving || std > t.Variance {
			return v1alpha1.StageOnline
		}
	}
	return cur
}

// Reasons of the AgentServing condition: why the agent last changed stage.
const (
	ReasonBootstrapping       = "Bootstrapping"       // INITIALIZED → OFFLINE
	ReasonNoBootstrapping     = "NoBootstrapping"     // INITIALIZED → ONLINE
	ReasonStartServing        = "StartServing"        // INITIALIZED → SERVING
	ReasonRewardReachedOnline = "RewardReachedOnline" // OFFLINE → ONLINE
	ReasonConverged           = "Converged"           // ONLINE → SERVING
	ReasonRewardDropped       = "RewardDropped"       // SERVING → ONLINE: mean below the serving threshold
	ReasonRewardUnstable      = "RewardUnstable"      // SERVING → ONLINE: spread above the variance threshold
)

// ReasonNoFreshRecommendation is the RecommendationProvided condition's
// reason, and a Warning Event's, when an acting external recommender's
// recommendation is too old to act on and the step holds.
const ReasonNoFreshRecommendation = "NoFreshRecommendation"

// Transition explains NextStage's move from cur to next with the same
// profile and rewards: the AgentServing condition's reason and a message
// with the figures that decided it, for an operator asking why an agent went
// back to training.
func Transition(cur, next v1alpha1.AgentStage, p v1alpha1.AgentProfile, rewards []float64) (reason, msg string) {
	t := p.Thresholds
	var mean, std float64
	n := min(len(rewards), t.Window)
	if n > 0 {
		mean, std = MeanStd(rewards[len(rewards)-n:])
	}
	figures := fmt.Sprintf("mean reward %.4g (std %.4g) over the last %d episodes", mean, std, n)
	switch {
	case next == v1alpha1.StageOffline:
		return ReasonBootstrapping, "bootstrapping: the fallback (HPA+VPA) acts and the agent trains offline from its recorded steps until the mean reward reaches the online threshold " + fmt.Sprintf("%.4g", t.Online)
	case next == v1alpha1.StageOnline && (cur == "" || cur == v1alpha1.StageInitialized):
		return ReasonNoBootstrapping, "no bootstrapping: the agent acts and trains online from the first step"
	case next == v1alpha1.StageOnline && cur == v1alpha1.StageOffline:
		return ReasonRewardReachedOnline, fmt.Sprintf("%s reached the online threshold %.4g: the agent acts and trains online", figures, t.Online)
	case next == v1alpha1.StageServing && (cur == "" || cur == v1alpha1.StageInitialized):
		return ReasonStartServing, fmt.Sprintf("the profile starts serving: the agent's policy acts frozen and trains again when the mean reward of the last %d episodes falls below %.4g or their std exceeds %.4g", t.Window, t.Serving, t.Variance)
	case next == v1alpha1.StageServing:
		return ReasonConverged, fmt.Sprintf("converged: %s, at least the serving threshold %.4g with std at most %.4g; the policy is frozen", figures, t.Serving, t.Variance)
	case next == v1alpha1.StageOnline && cur == v1alpha1.StageServing && mean < t.Serving:
		return ReasonRewardDropped, fmt.Sprintf("retraining: %s fell below the serving threshold %.4g", figures, t.Serving)
	case next == v1alpha1.StageOnline && cur == v1alpha1.StageServing:
		return ReasonRewardUnstable, fmt.Sprintf("retraining: %s varies more than the variance threshold %.4g", figures, t.Variance)
	}
	return "StageChanged", fmt.Sprintf("stage %s → %s: %s", cur, next, figures)
}

// MeanStd is the mean and the population standard deviation of x (0, 0
// when empty).
func MeanStd(x []float64) (mean, std float64) {
	if len(x) == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		std += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(std / float64(len(x)))
}

// AgentActs reports whether the external agent's recommendation is applied
// in stage s; in OFFLINE (and before any stage) the fallback HPA + VPA acts.
func AgentActs(s v1alpha1.AgentStage) bool {
	return s == v1alpha1.StageOnline || s == v1alpha1.StageServing
}
