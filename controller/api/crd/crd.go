// Package crd embeds the MultidimPodAutoscaler CustomResourceDefinition
// that controller-gen writes here (`make generate`), so that programs can
// install the CRD their binary was built with.
package crd

import _ "embed"

// MPA is the CRD manifest (YAML).
//
//go:embed autoscaling.aware.dev_multidimpodautoscalers.yaml
var MPA []byte
