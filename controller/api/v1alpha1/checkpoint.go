package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// CheckpointVersion is the format of MultidimPodAutoscalerCheckpoint's
// status.recommender written by this version of the controller.
const CheckpointVersion = "v1"

// MultidimPodAutoscalerCheckpoint keeps what an MPA's built-in HPA + VPA
// recommender has learnt (the VPA's decaying CPU and memory histograms and
// sample history, the HPA's stabilisation window and recent scale events)
// so that a restarted or replaced controller goes on from it instead of
// from nothing, as upstream VPA's VerticalPodAutoscalerCheckpoint does for
// its histograms. The controller writes one per MPA, named after it and
// owned by it (deleted with it).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mpacheckpoint,categories=autoscaling
// +kubebuilder:printcolumn:name="MPA",type=string,JSONPath=`.spec.mpaName`
// +kubebuilder:printcolumn:name="Steps",type=integer,JSONPath=`.status.steps`
// +kubebuilder:printcolumn:name="Updated",type=date,JSONPath=`.status.lastUpdateTime`
type MultidimPodAutoscalerCheckpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MultidimPodAutoscalerCheckpointSpec   `json:"spec"`
	Status MultidimPodAutoscalerCheckpointStatus `json:"status,omitempty,omitzero"`
}

// MultidimPodAutoscalerCheckpointList is a list of checkpoints.
//
// +kubebuilder:object:root=true
type MultidimPodAutoscalerCheckpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MultidimPodAutoscalerCheckpoint `json:"items"`
}

// MultidimPodAutoscalerCheckpointSpec names the MPA a checkpoint belongs to.
type MultidimPodAutoscalerCheckpointSpec struct {
	// MPAName is the MPA's name, in the checkpoint's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	MPAName string `json:"mpaName"`
	// MPAUID is the MPA object's UID: a checkpoint of an MPA deleted and
	// created again under the same name is not restored.
	MPAUID types.UID `json:"mpaUID"`
}

// MultidimPodAutoscalerCheckpointStatus is the recommender's state.
type MultidimPodAutoscalerCheckpointStatus struct {
	// LastUpdateTime is when the controller wrote it.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitzero"`
	// Version is the format of recommender (CheckpointVersion).
	Version string `json:"version,omitempty"`
	// ObservedGeneration is the MPA generation whose recommender it is: a
	// spec changed since is not restored into (the controller starts a
	// new recommender for a new spec).
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Steps is how many steps the recommender had taken.
	// +kubebuilder:validation:Minimum=0
	Steps int64 `json:"steps,omitempty"`
	// Recommender is the built-in HPA + VPA recommender's state, as the
	// controller's recommender/mpa.State serialises it.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Recommender runtime.RawExtension `json:"recommender,omitzero"`
}
