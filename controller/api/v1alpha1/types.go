package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MultidimPodAutoscaler scales a workload horizontally and vertically: its
// recommender (the default HPA + VPA algorithms, or a custom one such as the
// AWARE agent) sets replicas and per-container resources together, within
// the constraints and resource policy of the spec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mpa,categories=autoscaling
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.scaleTargetRef.name`
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.spec.constraints.minReplicas`
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.spec.constraints.maxReplicas`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.currentReplicas`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.updatePolicy.updateMode`
// +kubebuilder:printcolumn:name="Stage",type=string,JSONPath=`.status.agent.stage`
// +kubebuilder:printcolumn:name="Reward",type=number,JSONPath=`.status.agent.recentReward`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MultidimPodAutoscaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MultidimPodAutoscalerSpec   `json:"spec"`
	Status MultidimPodAutoscalerStatus `json:"status,omitempty,omitzero"`
}

// MultidimPodAutoscalerList is a list of MultidimPodAutoscalers.
//
// +kubebuilder:object:root=true
type MultidimPodAutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MultidimPodAutoscaler `json:"items"`
}

// MultidimPodAutoscalerSpec is the desired behaviour of an MPA.
type MultidimPodAutoscalerSpec struct {
	// ScaleTargetRef points to the controller (Deployment, StatefulSet, ...)
	// managing the pods to scale; it must expose the scale subresource.
	ScaleTargetRef autoscalingv2.CrossVersionObjectReference `json:"scaleTargetRef"`
	// UpdatePolicy says how recommendations are applied.
	// +optional
	UpdatePolicy *PodUpdatePolicy `json:"updatePolicy,omitempty"`
	// Metrics are the goals of horizontal scaling, as for a
	// HorizontalPodAutoscaler (used by the default recommender).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`
	// Constraints bound horizontal scaling.
	// +optional
	Constraints *ScalingConstraints `json:"constraints,omitempty"`
	// ResourcePolicy bounds vertical scaling per container.
	// +optional
	ResourcePolicy *PodResourcePolicy `json:"resourcePolicy,omitempty"`
	// Recommenders names the recommender that produces recommendations for
	// this object; empty means the default recommender.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	Recommenders []RecommenderSelector `json:"recommenders,omitempty"`
	// Agent is the profile of the AWARE agent that drives this MPA (the
	// paper's profile P: SLO, reward weight, lifecycle thresholds,
	// bootstrapping and action bounds). Unset fields take their defaults.
	// +optional
	Agent *AgentProfile `json:"agent,omitempty"`
}

// DefaultRecommenderName selects the built-in HPA + VPA recommender.
const DefaultRecommenderName = "default"

// UpdateMode says whether and how recommendations are applied to pods.
// +kubebuilder:validation:Enum=Off;Initial;Recreate;InPlaceOrRecreate
type UpdateMode string

// Update modes (the names of the upstream VPA's update modes).
const (
	// UpdateModeOff computes recommendations without applying them.
	UpdateModeOff UpdateMode = "Off"
	// UpdateModeInitial sets resources only when pods are created (by the
	// admission webhook) and scales replicas; running pods keep theirs.
	UpdateModeInitial UpdateMode = "Initial"
	// UpdateModeRecreate applies vertical changes by a rolling update of the
	// workload's pod template.
	UpdateModeRecreate UpdateMode = "Recreate"
	// UpdateModeInPlaceOrRecreate resizes running pods in place (the pods
	// resize subresource, Kubernetes 1.33+) and falls back to a rolling
	// update of the pod template when the cluster refuses the resize.
	UpdateModeInPlaceOrRecreate UpdateMode = "InPlaceOrRecreate"
)

// PodUpdatePolicy says how recommendations are applied.
type PodUpdatePolicy struct {
	// UpdateMode defaults to InPlaceOrRecreate.
	// +optional
	// +kubebuilder:default=InPlaceOrRecreate
	UpdateMode *UpdateMode `json:"updateMode,omitempty"`
}

// ScalingConstraints bound horizontal scaling.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type ScalingConstraints struct {
	// MinReplicas is the lower bound on replicas; default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the upper bound on replicas.
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas"`
	// Behavior configures scale-up and scale-down rates and stabilisation,
	// as for a HorizontalPodAutoscaler.
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// PodResourcePolicy bounds vertical scaling per container.
type PodResourcePolicy struct {
	// ContainerPolicies are per-container policies; containerName "*" sets
	// the policy of every container without its own. At most 6: the
	// apiserver's cost estimate of the minAllowed ≤ maxAllowed rules, which
	// parse quantities of unbounded length, stays within budget up to 7.
	// +optional
	// +listType=map
	// +listMapKey=containerName
	// +kubebuilder:validation:MaxItems=6
	ContainerPolicies []ContainerResourcePolicy `json:"containerPolicies,omitempty"`
}

// ContainerScalingMode says whether a container's resources are scaled.
// +kubebuilder:validation:Enum=Auto;Off
type ContainerScalingMode string

// Container scaling modes.
const (
	// ContainerScalingModeAuto scales the container (the default).
	ContainerScalingModeAuto ContainerScalingMode = "Auto"
	// ContainerScalingModeOff leaves the container's resources alone.
	ContainerScalingModeOff ContainerScalingMode = "Off"
)

// ContainerResourcePolicy bounds the resources of one container.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minAllowed) || !has(self.maxAllowed) || !('cpu' in self.minAllowed) || !('cpu' in self.maxAllowed) || quantity(string(self.minAllowed['cpu'])).compareTo(quantity(string(self.maxAllowed['cpu']))) <= 0",message="minAllowed.cpu must not exceed maxAllowed.cpu"
// +kubebuilder:validation:XValidation:rule="!has(self.minAllowed) || !has(self.maxAllowed) || !('memory' in self.minAllowed) || !('memory' in self.maxAllowed) || quantity(string(self.minAllowed['memory'])).compareTo(quantity(string(self.maxAllowed['memory']))) <= 0",message="minAllowed.memory must not exceed maxAllowed.memory"
type ContainerResourcePolicy struct {
	// ContainerName names a container of the target's pods, or "*".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ContainerName string `json:"containerName"`
	// Mode defaults to Auto.
	// +optional
	Mode *ContainerScalingMode `json:"mode,omitempty"`
	// MinAllowed is the least the recommender may set per resource.
	// +optional
	MinAllowed corev1.ResourceList `json:"minAllowed,omitempty"`
	// MaxAllowed is the most the recommender may set per resource.
	// +optional
	MaxAllowed corev1.ResourceList `json:"maxAllowed,omitempty"`
	// ControlledResources are the resources scaled; default cpu and memory.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=cpu;memory
	ControlledResources []corev1.ResourceName `json:"controlledResources,omitempty"`
}

// RecommenderSelector names a recommender.
type RecommenderSelector struct {
	// Name of the recommender: "default" (HPA + VPA, computed by the
	// controller) or the name of an external recommender such as "aware",
	// which writes status.recommendation itself.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// MultidimPodAutoscalerStatus is the observed state of an MPA.
type MultidimPodAutoscalerStatus struct {
	// ObservedGeneration is the spec generation the status reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastScaleTime is when the replica count last changed.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// CurrentReplicas is the number of replicas last seen.
	// +optional
	CurrentReplicas int32 `json:"currentReplicas,omitempty"`
	// DesiredReplicas is the replica count the updater last asked for: the
	// recommendation after constraints, rate limits and stabilisation.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`
	// Recommendation is the latest recommendation: replicas and
	// per-container resources.
	// +optional
	Recommendation *RecommendedPodResources `json:"recommendation,omitempty"`
	// AppliedRecommendationTime is the time (status.recommendation.time)
	// of the external recommendation the controller last acted on. An
	// external recommender knows that the controller has taken what it
	// wrote once this reaches its time: a controller behind its rounds
	// steps each MPA less often than once per step, and the recommender
	// waits for it instead of writing again.
	// +optional
	AppliedRecommendationTime *metav1.Time `json:"appliedRecommendationTime,omitempty"`
	// Agent is the state of the agent that drives this MPA, persisted here
	// so that a restarted controller continues from it.
	// +optional
	Agent *AgentStatus `json:"agent,omitempty"`
	// CurrentMetrics are the last read values of the spec's metrics.
	// +optional
	// +listType=atomic
	CurrentMetrics []autoscalingv2.MetricStatus `json:"currentMetrics,omitempty"`
	// Conditions are the latest observations of the MPA's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of an MPA.
const (
	// ConditionRecommendationProvided is true when the recommender has
	// produced a recommendation.
	ConditionRecommendationProvided = "RecommendationProvided"
	// ConditionAbleToScale is true when the target can be read and scaled.
	ConditionAbleToScale = "AbleToScale"
	// ConditionScalingLimited is true when a recommendation was capped by
	// the constraints or the resource policy.
	ConditionScalingLimited = "ScalingLimited"
	// ConditionMetricsAvailable is false when the metrics of the target
	// are missing or stale; the recommendation is then held.
	ConditionMetricsAvailable = "MetricsAvailable"
	// ConditionResizedInPlace is true when the last vertical change was
	// applied in place, false when it fell back to a rolling update.
	ConditionResizedInPlace = "ResizedInPlace"
	// ConditionAgentServing is true while the agent serves with a frozen
	// policy (stage SERVING) and false while it trains (OFFLINE, ONLINE);
	// its reason and message say why the agent last changed stage, e.g.
	// RewardDropped when the retraining detector sent it back to ONLINE.
	ConditionAgentServing = "AgentServing"
)

// RecommendedPodResources is the recommendation for the workload: its
// replicas and every container's resources.
type RecommendedPodResources struct {
	// Replicas is the recommended replica count, before the updater's
	// rate limits; unset means no horizontal recommendation.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// Recommender names who produced this recommendation.
	// +optional
	Recommender string `json:"recommender,omitempty"`
	// Time is when it was produced; the updater ignores recommendations
	// older than a few steps.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=containerName
	ContainerRecommendations []RecommendedContainerResources `json:"containerRecommendations,omitempty"`
	// Withheld, set by an external recommender instead of a recommendation,
	// says that it has none for this step and why (its agent's action or
	// reward was not a number, its checkpoint could not be read): while it
	// is fresh the controller acts on its built-in HPA+VPA recommendation
	// and reports the reason in the RecommendationProvided condition.
	// +optional
	Withheld *WithheldRecommendation `json:"withheld,omitempty"`
}

// WithheldRecommendation is why an external recommender has no
// recommendation for a step.
type WithheldRecommendation struct {
	// Reason is the cause in CamelCase, e.g. NaNAction.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9]*$`
	Reason string `json:"reason"`
	// Message says what happened in words.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// RecommendedContainerResources is the recommendation for one container.
type RecommendedContainerResources struct {
	// +kubebuilder:validation:MinLength=1
	ContainerName string `json:"containerName"`
	// Target is the recommended resources, within the policy's bounds.
	Target corev1.ResourceList `json:"target"`
	// LowerBound and UpperBound bound the useful range.
	// +optional
	LowerBound corev1.ResourceList `json:"lowerBound,omitempty"`
	// +optional
	UpperBound corev1.ResourceList `json:"upperBound,omitempty"`
	// UncappedTarget is the target before the policy's bounds were applied.
	// +optional
	UncappedTarget corev1.ResourceList `json:"uncappedTarget,omitempty"`
}
