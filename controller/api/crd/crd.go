// Package crd embeds the CustomResourceDefinitions that controller-gen
// writes here (`make generate`), so that programs can install the CRDs
// their binary was built with.
package crd

import _ "embed"

// MPA is the MultidimPodAutoscaler CRD manifest (YAML).
//
//go:embed autoscaling.aware.dev_multidimpodautoscalers.yaml
var MPA []byte

// Checkpoint is the MultidimPodAutoscalerCheckpoint CRD manifest (YAML).
//
//go:embed autoscaling.aware.dev_multidimpodautoscalercheckpoints.yaml
var Checkpoint []byte
