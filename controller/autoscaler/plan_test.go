package autoscaler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/target"
	"github.com/aware-autoscaler/aware/gym"
)

func TestDesiredReplicas(t *testing.T) {
	p, err := PolicyOf(testMPA())
	require.NoError(t, err)
	q := p
	q.Agent = q.Agent.DeepCopy()
	q.Agent.Actions.MaxReplicaChange = ptr(int32(1))
	tests := []struct {
		name       string
		p          Policy
		cur, rec   int32
		agent      bool
		want       int32
		wantCapped bool
	}{
		{"within bounds", p, 3, 5, false, 5, false},
		{"above max", p, 3, 50, false, 20, true},
		{"below min", p, 3, 0, false, 1, true},
		{"agent step limit up", q, 3, 6, true, 4, true},
		{"agent step limit down", q, 3, 1, true, 2, true},
		{"step limit ignored for the fallback", q, 3, 6, false, 6, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, capped := DesiredReplicas(tt.p, tt.cur, tt.rec, tt.agent)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantCapped, capped)
		})
	}
}

func TestTargetResources(t *testing.T) {
	p, err := PolicyOf(testMPA())
	require.NoError(t, err)
	q := p
	q.Agent = q.Agent.DeepCopy()
	q.Agent.Actions.MaxCPUChange = ptr(resource.MustParse("128m"))
	q.Agent.Actions.MaxMemoryChange = ptr(resource.MustParse("128Mi"))
	memOnly := p
	memOnly.ScaleCPU = false
	cur := Resources{CPU: 0.5, Memory: 512 * gym.MiB}
	tests := []struct {
		name       string
		p          Policy
		rec        Resources
		agent      bool
		want       Resources
		wantCapped bool
	}{
		{"within", p, Resources{CPU: 1, Memory: 1024 * gym.MiB}, false, Resources{CPU: 1, Memory: 1024 * gym.MiB}, false},
		{"rounded to millicores and MiB", p, Resources{CPU: 0.7004, Memory: 700.4 * gym.MiB}, false, Resources{CPU: 0.7, Memory: 700 * gym.MiB}, false},
		{"capped by the policy", p, Resources{CPU: 4, Memory: 100 * gym.MiB}, false, Resources{CPU: 2.048, Memory: 256 * gym.MiB}, true},
		{"agent step", q, Resources{CPU: 1, Memory: 128 * gym.MiB}, true, Resources{CPU: 0.628, Memory: 384 * gym.MiB}, true},
		{"uncontrolled cpu kept", memOnly, Resources{CPU: 1, Memory: 1024 * gym.MiB}, false, Resources{CPU: 0.5, Memory: 1024 * gym.MiB}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, capped := TargetResources(tt.p, cur, tt.rec, tt.agent)
			assert.InDelta(t, tt.want.CPU, got.CPU, 1e-9)
			assert.InDelta(t, tt.want.Memory, got.Memory, 1e-3)
			assert.Equal(t, tt.wantCapped, capped)
		})
	}
}

func TestWithResources(t *testing.T) {
	p, err := PolicyOf(testMPA())
	require.NoError(t, err)
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	tests := []struct {
		name string
		in   corev1.ResourceRequirements
		want corev1.ResourceRequirements
	}{
		{"requests = limits stay equal", corev1.ResourceRequirements{Requests: rl("500m", "256Mi"), Limits: rl("500m", "256Mi")},
			corev1.ResourceRequirements{Requests: rl("1", "512Mi"), Limits: rl("1", "512Mi")}},
		{"ratio kept", corev1.ResourceRequirements{Requests: rl("250m", "128Mi"), Limits: rl("500m", "256Mi")},
			corev1.ResourceRequirements{Requests: rl("500m", "256Mi"), Limits: rl("1", "512Mi")}},
		{"requests only", corev1.ResourceRequirements{Requests: rl("500m", "256Mi")},
			corev1.ResourceRequirements{Requests: rl("1", "512Mi")}},
		{"nothing set", corev1.ResourceRequirements{}, corev1.ResourceRequirements{Requests: rl("1", "512Mi")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithResources(p, tt.in, Resources{CPU: 1, Memory: 512 * gym.MiB})
			for _, pair := range [][2]corev1.ResourceList{{tt.want.Requests, got.Requests}, {tt.want.Limits, got.Limits}} {
				require.Len(t, pair[1], len(pair[0]))
				for k, v := range pair[0] {
					g := pair[1][k]
					assert.Zero(t, v.Cmp(g), "%s: want %s, got %s", k, v.String(), g.String())
				}
			}
			assert.Equal(t, Resources{CPU: 1, Memory: 512 * gym.MiB}, target.ContainerResources(got))
		})
	}
	assert.False(t, Differs(p, Resources{CPU: 0.5, Memory: 256 * gym.MiB}, Resources{CPU: 0.5001, Memory: 256.2 * gym.MiB}), "rounding noise is no change")
	assert.True(t, Differs(p, Resources{CPU: 0.5, Memory: 256 * gym.MiB}, Resources{CPU: 0.501, Memory: 256 * gym.MiB}))
}

// TestResizeBuiltIn: the built-in recommender's resizes (Resize without
// the agent) need a change beyond UpdateThreshold or resources outside the
// bounds.
func TestResizeBuiltIn(t *testing.T) {
	p, err := PolicyOf(testMPA()) // CPU 128m–2048m, memory 256Mi–3Gi
	require.NoError(t, err)
	cur := Resources{CPU: 0.5, Memory: 512 * gym.MiB}
	for _, tt := range []struct {
		name    string
		cur     Resources
		target  Resources
		cpuOnly bool
		want    bool
	}{
		{"same", cur, cur, false, false},
		{"CPU +10 %", cur, Resources{CPU: 0.55, Memory: 512 * gym.MiB}, false, false},
		{"CPU +12 %", cur, Resources{CPU: 0.56, Memory: 512 * gym.MiB}, false, true},
		{"memory −9 %", cur, Resources{CPU: 0.5, Memory: 466 * gym.MiB}, false, false},
		{"memory −20 %", cur, Resources{CPU: 0.5, Memory: 400 * gym.MiB}, false, true},
		{"memory −20 % but not controlled", cur, Resources{CPU: 0.5, Memory: 400 * gym.MiB}, true, false},
		{"current below minAllowed", Resources{CPU: 0.1, Memory: 512 * gym.MiB}, Resources{CPU: 0.128, Memory: 512 * gym.MiB}, false, true},
		{"current above maxAllowed", Resources{CPU: 0.5, Memory: 4096 * gym.MiB}, Resources{CPU: 0.5, Memory: 3900 * gym.MiB}, false, true},
		{"no current resources", Resources{}, cur, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := p
			q.ScaleMemory = !tt.cpuOnly
			_, resized := Resize(q, tt.cur, tt.target, false)
			assert.Equal(t, tt.want, resized)
		})
	}
}

func TestResize(t *testing.T) {
	p, err := PolicyOf(testMPA()) // CPU 128m–2048m, memory 256Mi–3Gi
	require.NoError(t, err)
	cur := Resources{CPU: 0.5, Memory: 512 * gym.MiB}
	small := Resources{CPU: 0.52, Memory: 512 * gym.MiB} // +4 %
	large := Resources{CPU: 0.6, Memory: 512 * gym.MiB}  // +20 %
	pct := func(v int32) *int32 { return &v }
	for _, tt := range []struct {
		name    string
		percent *int32 // the agent profile's minResizePercent; nil: unset
		noAgent bool   // the MPA has no agent profile
		agent   bool   // the agent acts
		target  Resources
		want    Resources
		resized bool
	}{
		{"built-in, small change kept", nil, false, false, small, cur, false},
		{"built-in, large change applied", nil, false, false, large, large, true},
		{"built-in ignores the agent's percent", pct(0), false, false, small, cur, false},
		{"agent, default 10 %, small change kept", nil, false, true, small, cur, false},
		{"agent, default 10 %, large change applied", nil, false, true, large, large, true},
		{"agent, 0 % applies every change", pct(0), false, true, small, small, true},
		{"agent, 0 %, no change is no resize", pct(0), false, true, cur, cur, false},
		{"agent, 25 % keeps +20 %", pct(25), false, true, large, cur, false},
		{"no profile: the built-in threshold", nil, true, true, small, cur, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := p
			if tt.noAgent {
				q.Agent = nil
			} else {
				prof := v1alpha1.DefaultAgentProfile()
				prof.Actions.MinResizePercent = tt.percent
				q.Agent = &prof
			}
			got, resized := Resize(q, cur, tt.target, tt.agent)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.resized, resized)
		})
	}
}

func TestRecommended(t *testing.T) {
	entry := func(name, cpu string) v1alpha1.RecommendedContainerResources {
		return v1alpha1.RecommendedContainerResources{ContainerName: name, Target: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	cur := Resources{CPU: 0.5, Memory: 512 * gym.MiB}
	for _, order := range [][]v1alpha1.RecommendedContainerResources{
		{entry("*", "2"), entry("workload", "1")},
		{entry("workload", "1"), entry("*", "2")},
	} {
		got, ok := Recommended(&v1alpha1.RecommendedPodResources{ContainerRecommendations: order}, "workload", cur)
		require.True(t, ok)
		assert.Equal(t, Resources{CPU: 1, Memory: 512 * gym.MiB}, got, "the named entry wins over \"*\"; memory it leaves out is kept")
	}
	got, ok := Recommended(&v1alpha1.RecommendedPodResources{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{entry("*", "2")}}, "workload", cur)
	assert.True(t, ok)
	assert.Equal(t, 2.0, got.CPU)
	got, ok = Recommended(&v1alpha1.RecommendedPodResources{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{entry("other", "2")}}, "workload", cur)
	assert.False(t, ok)
	assert.Equal(t, cur, got)
	_, ok = Recommended(nil, "workload", cur)
	assert.False(t, ok)
}
