package autoscaler

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/gym"
)

// stepAfter reconciles once, d of wall time after the previous step, and
// lets the updater apply the decision.
func (w *world) stepAfter(t *testing.T, d time.Duration) {
	t.Helper()
	w.now = w.now.Add(d)
	_, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "app"}})
	require.NoError(t, err)
	w.r.upd.drain(context.Background())
}

// TestTimeScaleHPADownscaleStabilisation: under WithTimeScale(k) the
// HPA's 300 s scale-down stabilisation window is simulated time, so the
// replicas of a load that fell come down 300 s / k of wall time after the
// last step of high load (the window counts the controller's steps at
// step × k each), as they do after 300 s on a real cluster (k = 1).
func TestTimeScaleHPADownscaleStabilisation(t *testing.T) {
	tests := []struct {
		name string
		k    float64
		step time.Duration // the controller's wall step
		want time.Duration // wall time from the last high step to the scale-down
	}{
		{"real cluster", 1, 15 * time.Second, 300 * time.Second},
		{"twin at 10x, 15s steps", 10, 15 * time.Second, 30 * time.Second},
		{"twin at 10x, 3s steps", 10, 3 * time.Second, 30 * time.Second},
		{"twin at 4x, 5s steps", 4, 5 * time.Second, 75 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			off := v1alpha1.ContainerScalingModeOff
			w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
				// Replicas only: the VPA would move the CPU limit and
				// with it the utilisation.
				m.Spec.ResourcePolicy.ContainerPolicies[0].Mode = &off
			}, WithStep(tc.step), WithTimeScale(tc.k))
			for range 3 { // 200 % of the limit: scale up
				w.stepAfter(t, tc.step)
			}
			peak := w.replicas(t)
			require.Greater(t, peak, int32(2), "the high load scaled up")
			high := w.now
			w.met.CPUUsage = 0.1 // 10 % of the limit: the HPA wants 1 pod
			for w.replicas(t) == peak {
				require.Less(t, w.now.Sub(high), 2*300*time.Second, "no scale-down within twice the window")
				w.stepAfter(t, tc.step)
			}
			assert.Equal(t, tc.want, w.now.Sub(high), "wall time until the scale-down (the window is 300 s simulated at %g×)", tc.k)
		})
	}
}

// probeName is a recommender that records what the controller gives it.
const probeName = "test-timescale-probe"

// probe records the probe recommender's last config and observations.
var probe struct {
	step  time.Duration
	times []time.Duration
}

type probeRecommender struct{}

func (probeRecommender) Name() string { return probeName }
func (probeRecommender) Recommend(o recommender.Observation) recommender.Allocation {
	probe.times = append(probe.times, o.Time)
	return o.Current
}

// registerProbe registers the probe recommender for the test only (the
// registry is the process's, and TestFindRecommender lists it).
func registerProbe(t *testing.T) {
	t.Helper()
	recommendersMu.Lock()
	defer recommendersMu.Unlock()
	n := len(registered)
	registered = append(registered, RecommenderFactory{Name: probeName, New: func(c RecommenderConfig) (recommender.Recommender, error) {
		probe.step, probe.times = c.Step, nil
		return probeRecommender{}, nil
	}})
	t.Cleanup(func() {
		recommendersMu.Lock()
		defer recommendersMu.Unlock()
		registered = registered[:n:n]
	})
}

// TestTimeScaleObservationTime: a recommender is built with the simulated
// step (the wall step × k) and observes the simulated time since it was
// built, the step that just ended included: (now − start) × k + step × k.
func TestTimeScaleObservationTime(t *testing.T) {
	registerProbe(t)
	for _, tc := range []struct {
		k     float64
		step  time.Duration
		times []time.Duration
	}{
		{1, 15 * time.Second, []time.Duration{15 * time.Second, 30 * time.Second, 45 * time.Second}},
		{10, 3 * time.Second, []time.Duration{30 * time.Second, 60 * time.Second, 90 * time.Second}},
		{2.5, 2 * time.Second, []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second}},
	} {
		w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
			m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: probeName}}
		}, WithStep(tc.step), WithTimeScale(tc.k))
		for range 3 {
			w.stepAfter(t, tc.step)
		}
		assert.Equal(t, time.Duration(float64(tc.step)*tc.k), probe.step, "k %g", tc.k)
		assert.Equal(t, tc.times, probe.times, "k %g", tc.k)
	}
}

func TestTimeScaleRefused(t *testing.T) {
	obs := ObserverFunc(func(context.Context, Query) (gym.Metrics, error) { return gym.Metrics{}, nil })
	for _, k := range []float64{0, 0.5, -1, math.NaN(), math.Inf(1)} {
		_, err := New(fake.NewClientBuilder().Build(), obs, nil, WithTimeScale(k))
		assert.ErrorContains(t, err, "time scale", "%g", k)
	}
	_, err := New(fake.NewClientBuilder().Build(), obs, nil, WithTimeScale(1.5))
	assert.NoError(t, err)
}

// TestHoldCause: a hold before the recommender's first recommendation of
// the agent's stage is told from one on a recommendation grown stale.
func TestHoldCause(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	later := metav1.NewTime(t0.Add(time.Minute))
	pol := Policy{Recommender: "aware"}
	for _, tc := range []struct {
		name string
		st   v1alpha1.MultidimPodAutoscalerStatus
		want string
	}{
		{"no recommendation", v1alpha1.MultidimPodAutoscalerStatus{}, HoldAwaitingFirst},
		{"the built-in's, in force until the hand-over", v1alpha1.MultidimPodAutoscalerStatus{
			Recommendation: &v1alpha1.RecommendedPodResources{Recommender: "hpa+vpa", Time: &later}}, HoldAwaitingFirst},
		{"the agent's, from before its stage began", v1alpha1.MultidimPodAutoscalerStatus{
			Recommendation: &v1alpha1.RecommendedPodResources{Recommender: "aware", Time: &t0},
			Agent:          &v1alpha1.AgentStatus{StageTime: &later}}, HoldAwaitingFirst},
		{"the agent's, in its stage, grown old before it was applied", v1alpha1.MultidimPodAutoscalerStatus{
			Recommendation: &v1alpha1.RecommendedPodResources{Recommender: "aware", Time: &later},
			Agent:          &v1alpha1.AgentStatus{StageTime: &t0}, AppliedRecommendationTime: &t0}, HoldStale},
		{"the agent's, applied, in force while it observes", v1alpha1.MultidimPodAutoscalerStatus{
			Recommendation: &v1alpha1.RecommendedPodResources{Recommender: "aware", Time: &later},
			Agent:          &v1alpha1.AgentStatus{StageTime: &t0}, AppliedRecommendationTime: &later}, HoldApplied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, holdCause(&v1alpha1.MultidimPodAutoscaler{Status: tc.st}, pol))
		})
	}
}
