package v1alpha1

import (
	"errors"
	"fmt"
	"math"
)

// AgentProfileKey is the ConfigMap key that holds an AgentProfile as YAML.
const AgentProfileKey = "profile.yaml"

// AgentProfileAnnotation on an MPA names the ConfigMap (same namespace)
// holding the profile of the agent that drives it.
const AgentProfileAnnotation = GroupName + "/profile"

// Defaults of an AgentProfile (paper §3.3–3.4 and the authors' artifact).
const (
	DefaultCPUTarget        = 0.7
	DefaultMemoryTarget     = 0.8
	DefaultAlpha            = 0.5 // equal weight of SLO and utilisation (gym.DefaultAlpha)
	DefaultOnlineThreshold  = 130 // the rule-based controller's episode reward
	DefaultServingThreshold = 100 // artifact: serve when the mean is at least 100
	DefaultVarianceLimit    = 10  // artifact: ... and the standard deviation below 10
	DefaultRewardWindow     = 10  // artifact: over the last 10 episodes
	DefaultEpisodeLength    = 100 // RL steps per episode
	// MaxStepReward is the largest reward of one step:
	// α·SP·|R| + (1−α)·Σ RU with SP, RU ≤ 1 and |R| = 2.
	MaxStepReward = 2
)

// AgentProfile is the user's configuration of one AWARE agent (the paper's
// profile P). It is not a resource: it is stored as YAML in a ConfigMap
// under AgentProfileKey. Zero fields take their defaults in Default.
type AgentProfile struct {
	// Targets are the utilisation targets (usage / limit) of the fallback
	// controller and of the MPA's default recommender.
	Targets UtilisationTargets `json:"targets"`
	// SLO is the application's service-level objective; empty means none
	// (SLO preservation is then always 1).
	SLO ProfileSLO `json:"slo"`
	// Alpha weighs SLO preservation against utilisation in the reward, in
	// [0, 1]; nil means DefaultAlpha.
	Alpha *float64 `json:"alpha,omitempty"`
	// Thresholds drive the agent's lifecycle (Algorithm 1).
	Thresholds RewardThresholds `json:"thresholds"`
	// Bootstrap keeps the fallback controller in charge while the agent
	// trains offline; nil means true.
	Bootstrap *bool `json:"bootstrap,omitempty"`
	// EpisodeLength is the number of RL steps per episode.
	EpisodeLength int `json:"episodeLength"`
}

// UtilisationTargets are usage / limit targets in (0, 1].
type UtilisationTargets struct {
	CPU    float64 `json:"cpu"`
	Memory float64 `json:"memory"`
}

// ProfileSLO is a latency or a throughput objective (at most one is set).
type ProfileSLO struct {
	// LatencyP99Seconds bounds the 99th-percentile latency from above.
	LatencyP99Seconds float64 `json:"latencyP99Seconds,omitempty"`
	// ThroughputRPS bounds the completed request rate from below.
	ThroughputRPS float64 `json:"throughputRPS,omitempty"`
}

// RewardThresholds are the lifecycle thresholds on the episode rewards of
// the last Window episodes: OFFLINE → ONLINE when their mean reaches Online;
// ONLINE → SERVING when the mean reaches Serving and the standard deviation
// is at most Variance; SERVING → ONLINE otherwise.
type RewardThresholds struct {
	Online   float64 `json:"online"`
	Serving  float64 `json:"serving"`
	Variance float64 `json:"variance"`
	Window   int     `json:"window"`
}

// DefaultAgentProfile returns a profile with every default and no SLO.
func DefaultAgentProfile() AgentProfile {
	var p AgentProfile
	p.Default()
	return p
}

// Default sets every zero or nil field to its default.
func (p *AgentProfile) Default() {
	setZero(&p.Targets.CPU, DefaultCPUTarget)
	setZero(&p.Targets.Memory, DefaultMemoryTarget)
	if p.Alpha == nil {
		a := float64(DefaultAlpha)
		p.Alpha = &a
	}
	setZero(&p.Thresholds.Online, DefaultOnlineThreshold)
	setZero(&p.Thresholds.Serving, DefaultServingThreshold)
	setZero(&p.Thresholds.Variance, DefaultVarianceLimit)
	if p.Thresholds.Window == 0 {
		p.Thresholds.Window = DefaultRewardWindow
	}
	if p.Bootstrap == nil {
		b := true
		p.Bootstrap = &b
	}
	if p.EpisodeLength == 0 {
		p.EpisodeLength = DefaultEpisodeLength
	}
}

func setZero(v *float64, def float64) {
	if *v == 0 {
		*v = def
	}
}

// AlphaOrDefault is Alpha, or DefaultAlpha when unset.
func (p AgentProfile) AlphaOrDefault() float64 {
	if p.Alpha == nil {
		return DefaultAlpha
	}
	return *p.Alpha
}

// Bootstraps reports whether the agent starts OFFLINE behind the fallback
// controller (Bootstrap, default true).
func (p AgentProfile) Bootstraps() bool { return p.Bootstrap == nil || *p.Bootstrap }

// Validate reports every problem of a defaulted profile, each naming its
// field.
func (p AgentProfile) Validate() error {
	var errs []error
	bad := func(field string, v float64, want string) {
		errs = append(errs, fmt.Errorf("%s: %g %s", field, v, want))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"targets.cpu", p.Targets.CPU}, {"targets.memory", p.Targets.Memory}} {
		if !(f.v > 0 && f.v <= 1) {
			bad(f.name, f.v, "is not in (0, 1]")
		}
	}
	lat, thr := p.SLO.LatencyP99Seconds, p.SLO.ThroughputRPS
	switch {
	case !(lat >= 0) || math.IsInf(lat, 0):
		bad("slo.latencyP99Seconds", lat, "must be a non-negative number")
	case !(thr >= 0) || math.IsInf(thr, 0):
		bad("slo.throughputRPS", thr, "must be a non-negative number")
	case lat > 0 && thr > 0:
		errs = append(errs, errors.New("slo: set latencyP99Seconds or throughputRPS, not both"))
	}
	if a := p.AlphaOrDefault(); !(a >= 0 && a <= 1) {
		bad("alpha", a, "is not in [0, 1]")
	}
	if p.EpisodeLength < 1 {
		errs = append(errs, fmt.Errorf("episodeLength: %d must be positive", p.EpisodeLength))
	}
	top := float64(MaxStepReward * max(p.EpisodeLength, 1))
	for _, f := range []struct {
		name string
		v    float64
	}{{"thresholds.online", p.Thresholds.Online}, {"thresholds.serving", p.Thresholds.Serving}} {
		if !(f.v >= 0 && f.v <= top) {
			bad(f.name, f.v, fmt.Sprintf("is not in [0, %g] (%d per step × episodeLength %d)", top, MaxStepReward, p.EpisodeLength))
		}
	}
	if v := p.Thresholds.Variance; !(v > 0) || math.IsInf(v, 0) {
		bad("thresholds.variance", v, "must be a positive number")
	}
	if p.Thresholds.Window < 1 {
		errs = append(errs, fmt.Errorf("thresholds.window: %d must be positive", p.Thresholds.Window))
	}
	return errors.Join(errs...)
}
