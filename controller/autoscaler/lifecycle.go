package autoscaler

import (
	"math"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
)

// NextStage is Algorithm 1 of the paper: the agent's stage after an episode
// ends, given the defaulted profile and the rewards of the most recent
// complete episodes (oldest first; only the last thresholds.window count).
// A window that is not yet full keeps the stage, except INITIALIZED, which
// moves to OFFLINE (bootstrapping) or ONLINE at once.
func NextStage(cur v1alpha1.AgentStage, p v1alpha1.AgentProfile, rewards []float64) v1alpha1.AgentStage {
	if cur == "" || cur == v1alpha1.StageInitialized {
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
