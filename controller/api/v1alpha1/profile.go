package v1alpha1

import (
	"errors"
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
// profile P), the MPA's spec.agent. Zero fields take their defaults in
// Default; the CRD validates ranges, and Validate checks the defaulted
// profile as a whole.
//
// +kubebuilder:validation:XValidation:rule="!has(self.startServing) || !self.startServing || (has(self.bootstrap) && !self.bootstrap)",message="startServing needs bootstrap: false (an agent that starts SERVING does not bootstrap)"
type AgentProfile struct {
	// Targets are the utilisation targets (usage / limit) of the fallback
	// controller and of the MPA's default recommender.
	// +optional
	Targets UtilisationTargets `json:"targets,omitzero"`
	// SLO is the application's service-level objective; empty means none
	// (SLO preservation is then always 1).
	// +optional
	SLO ProfileSLO `json:"slo,omitzero"`
	// Alpha weighs SLO preservation against utilisation in the reward, in
	// [0, 1]; unset means 0.5.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	Alpha *float64 `json:"alpha,omitempty"`
	// Thresholds drive the agent's lifecycle (Algorithm 1).
	// +optional
	Thresholds RewardThresholds `json:"thresholds,omitzero"`
	// Bootstrap keeps the fallback controller in charge while the agent
	// trains offline; unset means true.
	// +optional
	Bootstrap *bool `json:"bootstrap,omitempty"`
	// StartServing starts the agent in SERVING when its lifecycle begins:
	// its policy acts frozen from the first step and trains again only
	// when its reward drops below thresholds.serving or varies above
	// thresholds.variance (SERVING → ONLINE). For a policy trained
	// elsewhere, which the agent runner loads when the MPA names it
	// (annotation agents.aware.dev/initial-policy); without one the agent
	// is a fresh one, frozen. Needs bootstrap: false.
	// +optional
	StartServing bool `json:"startServing,omitempty"`
	// EpisodeLength is the number of RL steps per episode; default 100.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	EpisodeLength int `json:"episodeLength,omitempty"`
	// Actions bound how far one agent step may move the allocation.
	// +optional
	Actions ActionBounds `json:"actions,omitzero"`
}

// UtilisationTargets are usage / limit targets in (0, 1].
type UtilisationTargets struct {
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	CPU float64 `json:"cpu,omitempty"`
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	Memory float64 `json:"memory,omitempty"`
}

// ProfileSLO is a latency or a throughput objective (at most one is set).
//
// +kubebuilder:validation:XValidation:rule="!(has(self.latencyP99Seconds) && has(self.throughputRPS))",message="set latencyP99Seconds or throughputRPS, not both"
type ProfileSLO struct {
	// LatencyP99Seconds bounds the 99th-percentile latency from above.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	LatencyP99Seconds float64 `json:"latencyP99Seconds,omitempty"`
	// ThroughputRPS bounds the completed request rate from below.
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	ThroughputRPS float64 `json:"throughputRPS,omitempty"`
}

// RewardThresholds are the lifecycle thresholds on the episode rewards of
// the last Window episodes: OFFLINE → ONLINE when their mean reaches Online;
// ONLINE → SERVING when the mean reaches Serving and the standard deviation
// is at most Variance; SERVING → ONLINE otherwise.
type RewardThresholds struct {
	// +optional
	// +kubebuilder:validation:Minimum=0
	Online float64 `json:"online,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	Serving float64 `json:"serving,omitempty"`
	// +optional
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	Variance float64 `json:"variance,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Window int `json:"window,omitempty"`
}

// ActionBounds bound one agent step: the largest change of replicas, of
// the CPU limit and of the memory limit (the artifact's discrete agent moves
// by ±1 replica, ±128m and ±128Mi). Unset fields do not bound the step; the
// MPA's constraints and resource policy bound the result in every case.
type ActionBounds struct {
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxReplicaChange *int32 `json:"maxReplicaChange,omitempty"`
	// +optional
	MaxCPUChange *resource.Quantity `json:"maxCPUChange,omitempty"`
	// +optional
	MaxMemoryChange *resource.Quantity `json:"maxMemoryChange,omitempty"`
	// MinResizePercent is the smallest change of the CPU or memory limit,
	// in percent of the running value, that the updater applies to running
	// pods when the agent acts; a smaller change keeps the pods' resources
	// (and the trajectory records what they keep). Unset: 10, upstream
	// VPA's updater threshold and the built-in recommender's; 0 applies
	// every change.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MinResizePercent *int32 `json:"minResizePercent,omitempty"`
}

// DefaultMinResizePercent is ActionBounds.MinResizePercent when unset.
const DefaultMinResizePercent = 10

// MinResizeFraction is MinResizePercent as a fraction, its default when
// unset.
func (a ActionBounds) MinResizeFraction() float64 {
	if a.MinResizePercent == nil {
		return DefaultMinResizePercent / 100.0
	}
	return float64(*a.MinResizePercent) / 100
}

// AgentStage is a stage of the agent lifecycle (paper Algorithm 1).
// +kubebuilder:validation:Enum=Initialized;Offline;Online;Serving
type AgentStage string

// Agent stages.
const (
	// StageInitialized: the agent exists but has seen no episode.
	StageInitialized AgentStage = "Initialized"
	// StageOffline: the fallback (HPA + VPA) acts while the agent trains on
	// its trajectories.
	StageOffline AgentStage = "Offline"
	// StageOnline: the agent acts and keeps training.
	StageOnline AgentStage = "Online"
	// StageServing: the agent acts with a frozen policy.
	StageServing AgentStage = "Serving"
)

// AgentStatus is the persisted state of the agent that drives an MPA.
type AgentStatus struct {
	// Stage is the lifecycle stage.
	Stage AgentStage `json:"stage"`
	// StageTime is when the stage last changed.
	// +optional
	StageTime *metav1.Time `json:"stageTime,omitempty"`
	// Episode is the current episode number, written when an episode
	// ends. The step within the episode and the rewards of single steps
	// are not status: a status write per MPA per step cost the API server
	// more than the controller's whole round (see
	// aware_controller_step_reward for the last step's reward); the
	// controller restores them from the trajectory store after a restart.
	// +optional
	Episode int64 `json:"episode,omitempty"`
	// RecentReward is the mean reward of the last thresholds.window
	// complete episodes, RecentRewardStdDev their standard deviation.
	// +optional
	RecentReward *float64 `json:"recentReward,omitempty"`
	// +optional
	RecentRewardStdDev *float64 `json:"recentRewardStdDev,omitempty"`
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
	if p.Actions.MinResizePercent == nil {
		v := int32(DefaultMinResizePercent)
		p.Actions.MinResizePercent = &v
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
	if p.StartServing && p.Bootstraps() {
		errs = append(errs, errors.New("startServing: an agent that starts SERVING does not bootstrap; set bootstrap: false"))
	}
	if r := p.Actions.MaxReplicaChange; r != nil && *r < 1 {
		errs = append(errs, fmt.Errorf("actions.maxReplicaChange: %d must be positive", *r))
	}
	if r := p.Actions.MinResizePercent; r != nil && (*r < 0 || *r > 100) {
		errs = append(errs, fmt.Errorf("actions.minResizePercent: %d is not in [0, 100]", *r))
	}
	for _, q := range []struct {
		name string
		q    *resource.Quantity
	}{{"actions.maxCPUChange", p.Actions.MaxCPUChange}, {"actions.maxMemoryChange", p.Actions.MaxMemoryChange}} {
		if q.q != nil && q.q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("%s: %s must be positive", q.name, q.q))
		}
	}
	return errors.Join(errs...)
}
