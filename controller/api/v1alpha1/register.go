package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package.
const GroupName = "autoscaling.aware.dev"

// GroupVersion is the group and version of this package's objects.
var GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the group-qualified resource of an unqualified name,
// e.g. "multidimpodautoscalers".
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &MultidimPodAutoscaler{}, &MultidimPodAutoscalerList{},
		&MultidimPodAutoscalerCheckpoint{}, &MultidimPodAutoscalerCheckpointList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
