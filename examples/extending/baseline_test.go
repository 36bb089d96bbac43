package extending_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// stepScaler is a baseline autoscaler of our own: one replica more when
// the pods' CPU is above 80 % of their limits, one fewer below 30 %, the
// per-pod CPU and memory limits left as they are.
type stepScaler struct{ b recommender.Bounds }

func (stepScaler) Name() string { return "step-scaler" }

func (s stepScaler) Recommend(o recommender.Observation) recommender.Allocation {
	a := o.Current
	if used := o.CPUUsage / (float64(a.Replicas) * a.CPU); used > 0.8 {
		a.Replicas++
	} else if used < 0.3 {
		a.Replicas--
	}
	return s.b.Clamp(a)
}

func init() {
	baselines.Register(baselines.Factory{Name: "step-scaler", New: func(b recommender.Bounds, _ time.Duration, _ float64) (recommender.Recommender, error) {
		return stepScaler{b}, b.Validate()
	}})
}

// TestBaselineFromOutside: the registered baseline is listed after the
// paper's (so `aware run --baselines step-scaler` runs it) and runs on the
// simulator over generated applications beside HPA+VPA.
func TestBaselineFromOutside(t *testing.T) {
	var names []string
	for _, f := range baselines.Factories() {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"static", "hpa", "vpa", "hpa+vpa", baselines.DefaultTarget, "step-scaler"}, names)
	assert.Panics(t, func() { baselines.Register(baselines.Factory{Name: "hpa", New: nil}) })

	prof, simApps := simulated(t, 4)
	for _, name := range []string{"step-scaler", "hpa+vpa"} {
		f, ok := baselines.Find(name)
		require.True(t, ok, name)
		cl, err := sim.New(prof, simApps)
		require.NoError(t, err)
		res, err := baselines.Run(context.Background(), cl, f, baselines.Config{Steps: 120, Seed: 1})
		require.NoError(t, err, name)
		assert.Equal(t, name, res.Baseline)
		assert.Positive(t, res.Replicas, name)
	}
}
