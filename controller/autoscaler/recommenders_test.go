package autoscaler

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
)

// Recommenders the tests register (once: the registry is the process's).
const (
	fixedName  = "test-fixed"  // 3 × (1 core, 1Gi), within the bounds
	brokenName = "test-broken" // refuses every spec
	nilName    = "test-nil"    // builds nothing
)

func init() {
	RegisterRecommender(RecommenderFactory{Name: fixedName, New: func(c RecommenderConfig) (recommender.Recommender, error) {
		return &recommender.Fake{ID: fixedName, Script: []recommender.Allocation{c.Policy.Bounds.Clamp(recommender.Allocation{Replicas: 3, CPU: 1, Memory: 1 << 30})}}, nil
	}})
	RegisterRecommender(RecommenderFactory{Name: brokenName, New: func(RecommenderConfig) (recommender.Recommender, error) {
		return nil, errors.New("this recommender needs a latency SLO")
	}})
	RegisterRecommender(RecommenderFactory{Name: nilName, New: func(RecommenderConfig) (recommender.Recommender, error) { return nil, nil }})
}

// TestRegisterRecommenderRefuses: an empty name, no New, the default's
// name and a name registered before are programming errors.
func TestRegisterRecommenderRefuses(t *testing.T) {
	newFake := func(RecommenderConfig) (recommender.Recommender, error) { return recommender.NewFake(), nil }
	for _, tt := range []struct {
		name string
		f    RecommenderFactory
		want string
	}{
		{"empty name", RecommenderFactory{New: newFake}, "name and New are required"},
		{"no New", RecommenderFactory{Name: "test-no-new"}, "name and New are required"},
		{"the default", RecommenderFactory{Name: v1alpha1.DefaultRecommenderName, New: newFake}, "registered twice"},
		{"duplicate", RecommenderFactory{Name: fixedName, New: newFake}, "registered twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.PanicsWithValue(t, panicText(tt.f, tt.want), func() { RegisterRecommender(tt.f) })
		})
	}
	_, ok := FindRecommender("test-no-new")
	assert.False(t, ok, "a refused registration leaves nothing behind")
}

func panicText(f RecommenderFactory, why string) string {
	if why == "registered twice" {
		return "autoscaler: recommender " + f.Name + " registered twice"
	}
	return `autoscaler: RegisterRecommender "` + f.Name + `": name and New are required`
}

// TestFindRecommender: the default and registered names are built in
// process (not External); any other name is an external recommender's,
// for which the controller builds the default as the fallback.
func TestFindRecommender(t *testing.T) {
	for _, tt := range []struct {
		name     string
		found    bool
		built    string // the recommender the controller runs for the MPA
		external bool
	}{
		{v1alpha1.DefaultRecommenderName, true, "hpa+vpa", false},
		{fixedName, true, fixedName, false},
		{"aware", false, "hpa+vpa", true},
		{"hpa+vpa", false, "hpa+vpa", true}, // the default's Name(), not its registry name
		{"", false, "hpa+vpa", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := FindRecommender(tt.name)
			assert.Equal(t, tt.found, ok)
			if ok {
				assert.Equal(t, tt.name, f.Name)
			}
			m := testMPA()
			m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: tt.name}}
			pol, err := PolicyOf(m)
			require.NoError(t, err)
			assert.Equal(t, tt.external, pol.External())
			w := newWorld(t, nil)
			rec, err := w.r.newRecommender(pol)
			require.NoError(t, err)
			assert.Equal(t, tt.built, rec.Name())
			_, builtin := rec.(*mpa.MPA)
			assert.Equal(t, tt.built == "hpa+vpa", builtin)
		})
	}
	var names []string
	for _, f := range Recommenders() {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{v1alpha1.DefaultRecommenderName, fixedName, brokenName, nilName}, names)
}

// TestReconcileRegisteredRecommender: an MPA naming a registered
// recommender gets it in process: its recommendation is the status's and
// is actuated, at every step, whatever the agent's stage; it is not
// checkpointed. A factory that fails (or builds nothing) leaves the MPA
// unable to scale, saying why.
func TestReconcileRegisteredRecommender(t *testing.T) {
	w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
		m.UID = "uid-1"
		m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: fixedName}}
	}, WithCheckpoints(nil, 1))
	m := w.step(t)
	require.NotNil(t, m.Status.Recommendation)
	assert.Equal(t, fixedName, m.Status.Recommendation.Recommender)
	assert.Equal(t, int32(3), *m.Status.Recommendation.Replicas)
	assert.Empty(t, m.Status.Recommendation.ContainerRecommendations[0].LowerBound, "no VPA bounds")
	c := condition(m, v1alpha1.ConditionRecommendationProvided)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, "acting on the recommendation of "+fixedName, c.Message)
	assert.Equal(t, v1alpha1.StageOffline, m.Status.Agent.Stage)
	assert.Equal(t, int32(3), m.Status.DesiredReplicas)
	assert.Equal(t, int32(3), w.replicas(t), "scaled through the scale subresource")
	assert.Equal(t, "1", w.podCPU(t, "app-1"), "resized in place")
	var ck v1alpha1.MultidimPodAutoscalerCheckpoint
	err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "app"}, &ck)
	assert.True(t, apierrors.IsNotFound(err), "a recommender that is not the built-in one is not checkpointed: %v", err)
	n, err := w.r.FlushCheckpoints(context.Background())
	assert.NoError(t, err)
	assert.Zero(t, n)

	for _, tt := range []struct{ name, msg string }{
		{brokenName, "this recommender needs a latency SLO"},
		{nilName, `recommender "test-nil" built nothing`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, func(m *v1alpha1.MultidimPodAutoscaler) {
				m.Spec.Recommenders = []v1alpha1.RecommenderSelector{{Name: tt.name}}
			})
			m := w.step(t)
			c := condition(m, v1alpha1.ConditionAbleToScale)
			assert.Equal(t, metav1.ConditionFalse, c.Status)
			assert.Equal(t, "InvalidSpec", c.Reason)
			assert.Equal(t, tt.msg, c.Message)
			assert.Equal(t, int32(2), w.replicas(t))
			assert.Nil(t, w.r.state[m.UID].rec)
		})
	}
}
