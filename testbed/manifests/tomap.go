package manifests

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ToMap converts obj to the map form of its JSON, without what the API
// server owns: the status (also of a StatefulSet's volume claim templates)
// and null fields (an unset creationTimestamp). Other empty objects stay:
// they mean something (a CRD's subresources.status: {}, emptyDir: {}).
func ToMap(obj client.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("manifests: %s: %w", Key(obj), err)
	}
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok {
		if tmpls, ok := spec["volumeClaimTemplates"].([]any); ok {
			for _, t := range tmpls {
				if tm, ok := t.(map[string]any); ok {
					delete(tm, "status")
				}
			}
		}
	}
	prune(m)
	return m, nil
}

// prune removes null fields.
func prune(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			prune(e)
		}
	case []any:
		for _, e := range t {
			prune(e)
		}
	}
}
