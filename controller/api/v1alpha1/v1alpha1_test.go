package v1alpha1

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

const crdFile = "../crd/autoscaling.aware.dev_multidimpodautoscalers.yaml"

func TestCRDHasSchemaAndRules(t *testing.T) {
	data, err := os.ReadFile(crdFile)
	require.NoError(t, err)
	var crd map[string]any
	require.NoError(t, yaml.Unmarshal(data, &crd))

	spec := crd["spec"].(map[string]any)
	assert.Equal(t, GroupName, spec["group"])
	names := spec["names"].(map[string]any)
	assert.Equal(t, "MultidimPodAutoscaler", names["kind"])
	assert.Equal(t, []any{"mpa"}, names["shortNames"])
	versions := spec["versions"].([]any)
	require.Len(t, versions, 1)
	v := versions[0].(map[string]any)
	assert.Equal(t, GroupVersion.Version, v["name"])
	assert.Equal(t, map[string]any{"status": map[string]any{}}, v["subresources"])
	var columns []string
	for _, c := range v["additionalPrinterColumns"].([]any) {
		columns = append(columns, c.(map[string]any)["name"].(string))
	}
	assert.Equal(t, []string{"Target", "Min", "Max", "Replicas", "Mode", "Stage", "Reward", "Age"}, columns)

	text := string(data)
	for _, rule := range []string{
		"self.minReplicas <= self.maxReplicas",
		"minAllowed.cpu must not exceed maxAllowed.cpu",
		"minAllowed.memory must not exceed maxAllowed.memory",
	} {
		assert.Contains(t, text, rule)
	}
	assert.Contains(t, text, "- InPlaceOrRecreate", "updateMode enum")
	for _, rule := range []string{
		"set latencyP99Seconds or throughputRPS, not both",
	} {
		assert.Contains(t, text, rule)
	}
}

// TestGeneratedFilesCurrent runs controller-gen into a temporary directory
// and compares with the committed DeepCopy and CRD.
func TestGeneratedFilesCurrent(t *testing.T) {
	gen, err := filepath.Abs("../../../.bin/controller-gen")
	require.NoError(t, err)
	if _, err := os.Stat(gen); err != nil {
		t.Skipf("controller-gen not installed (run `make setup`): %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(gen, "object", "crd:allowDangerousTypes=true", "paths=./", "output:object:dir="+dir, "output:crd:dir="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for got, want := range map[string]string{
		"zz_generated.deepcopy.go":                          "zz_generated.deepcopy.go",
		"autoscaling.aware.dev_multidimpodautoscalers.yaml": crdFile,
	} {
		g, err := os.ReadFile(filepath.Join(dir, got))
		require.NoError(t, err)
		w, err := os.ReadFile(want)
		require.NoError(t, err)
		assert.Equal(t, string(w), string(g), "%s is stale: run `make generate`", want)
	}
}

func TestSchemeAndDeepCopy(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, AddToScheme(s))
	gvk := GroupVersion.WithKind("MultidimPodAutoscaler")
	obj, err := s.New(gvk)
	require.NoError(t, err)
	assert.IsType(t, &MultidimPodAutoscaler{}, obj)
	assert.Equal(t, "multidimpodautoscalers.autoscaling.aware.dev", Resource("multidimpodautoscalers").String())

	mode := UpdateModeInPlaceOrRecreate
	in := &MultidimPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"},
		Spec: MultidimPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "a"},
			UpdatePolicy:   &PodUpdatePolicy{UpdateMode: &mode},
			Constraints:    &ScalingConstraints{MinReplicas: ptr(int32(1)), MaxReplicas: 20},
			ResourcePolicy: &PodResourcePolicy{ContainerPolicies: []ContainerResourcePolicy{{
				ContainerName: "workload",
				MinAllowed:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("128m")},
			}}},
		},
	}
	out := in.DeepCopyObject().(*MultidimPodAutoscaler)
	require.Equal(t, in, out)
	*out.Spec.UpdatePolicy.UpdateMode = UpdateModeOff
	out.Spec.ResourcePolicy.ContainerPolicies[0].MinAllowed[corev1.ResourceCPU] = resource.MustParse("1")
	assert.Equal(t, UpdateModeInPlaceOrRecreate, *in.Spec.UpdatePolicy.UpdateMode, "deep copy shares the update mode")
	assert.Equal(t, "128m", in.Spec.ResourcePolicy.ContainerPolicies[0].MinAllowed.Cpu().String())

	// An empty status is left out of the serialised object.
	data, err := yaml.Marshal(in)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "status")
}

func ptr[T any](v T) *T { return &v }

func TestAgentProfileDefault(t *testing.T) {
	p := DefaultAgentProfile()
	require.NoError(t, p.Validate())
	assert.Equal(t, UtilisationTargets{CPU: DefaultCPUTarget, Memory: DefaultMemoryTarget}, p.Targets)
	assert.Equal(t, RewardThresholds{Online: 130, Serving: 100, Variance: 10, Window: 10}, p.Thresholds)
	assert.Equal(t, 100, p.EpisodeLength)
	assert.True(t, p.Bootstraps())
	assert.Equal(t, 0.5, p.AlphaOrDefault())
	assert.Equal(t, 0.1, p.Actions.MinResizeFraction())
	assert.Equal(t, 0.1, ActionBounds{}.MinResizeFraction(), "unset")

	// Explicit zero alpha and false bootstrap survive Default.
	q := AgentProfile{Alpha: ptr(0.0), Bootstrap: ptr(false), Targets: UtilisationTargets{CPU: 0.5}}
	q.Default()
	assert.Equal(t, 0.0, q.AlphaOrDefault())
	assert.False(t, q.Bootstraps())
	assert.Equal(t, 0.5, q.Targets.CPU)
	assert.Equal(t, DefaultMemoryTarget, q.Targets.Memory)
}

func TestAgentProfileValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*AgentProfile)
		wants []string
	}{
		{"latency SLO", func(p *AgentProfile) { p.SLO.LatencyP99Seconds = 0.2 }, nil},
		{"throughput SLO", func(p *AgentProfile) { p.SLO.ThroughputRPS = 50 }, nil},
		{"both SLOs", func(p *AgentProfile) { p.SLO = ProfileSLO{LatencyP99Seconds: 1, ThroughputRPS: 1} }, []string{"slo: set latencyP99Seconds or throughputRPS, not both"}},
		{"negative latency", func(p *AgentProfile) { p.SLO.LatencyP99Seconds = -1 }, []string{"slo.latencyP99Seconds"}},
		{"targets", func(p *AgentProfile) { p.Targets = UtilisationTargets{CPU: 1.5, Memory: -0.1} }, []string{"targets.cpu: 1.5", "targets.memory: -0.1"}},
		{"alpha", func(p *AgentProfile) { p.Alpha = ptr(2.0) }, []string{"alpha: 2 is not in [0, 1]"}},
		{"threshold above the largest reward", func(p *AgentProfile) { p.Thresholds.Online = 250 }, []string{"thresholds.online: 250 is not in [0, 200]"}},
		{"short episodes", func(p *AgentProfile) { p.EpisodeLength = 50 }, []string{"thresholds.online: 130 is not in [0, 100]"}},
		{"variance", func(p *AgentProfile) { p.Thresholds.Variance = -1 }, []string{"thresholds.variance: -1"}},
		{"window and episode", func(p *AgentProfile) { p.Thresholds.Window, p.EpisodeLength = -1, -1 }, []string{"thresholds.window: -1", "episodeLength: -1"}},
		{"action bounds", func(p *AgentProfile) {
			p.Actions = ActionBounds{MaxReplicaChange: ptr(int32(0)), MaxCPUChange: ptr(resource.MustParse("-1m")), MaxMemoryChange: ptr(resource.MustParse("0"))}
		}, []string{"actions.maxReplicaChange: 0", "actions.maxCPUChange: -1m must be positive", "actions.maxMemoryChange: 0 must be positive"}},
		{"resize threshold", func(p *AgentProfile) { p.Actions.MinResizePercent = ptr(int32(101)) }, []string{"actions.minResizePercent: 101 is not in [0, 100]"}},
		{"resize every change", func(p *AgentProfile) { p.Actions.MinResizePercent = ptr(int32(0)) }, nil},
		{"starts serving", func(p *AgentProfile) { p.StartServing, p.Bootstrap = true, ptr(false) }, nil},
		{"starts serving and bootstraps", func(p *AgentProfile) { p.StartServing = true }, []string{"startServing: an agent that starts SERVING does not bootstrap"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultAgentProfile()
			tt.edit(&p)
			err := p.Validate()
			if len(tt.wants) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestAgentProfileYAML(t *testing.T) {
	const doc = `
targets: {cpu: 0.6}
slo: {latencyP99Seconds: 0.25}
alpha: 0
bootstrap: false
`
	var p AgentProfile
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &p))
	p.Default()
	require.NoError(t, p.Validate())
	assert.Equal(t, 0.6, p.Targets.CPU)
	assert.Equal(t, 0.25, p.SLO.LatencyP99Seconds)
	assert.Zero(t, p.AlphaOrDefault())
	assert.False(t, p.Bootstraps())
	out, err := yaml.Marshal(p)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "actions:\n  minResizePercent: 10\nalpha: 0\nbootstrap: false\nepisodeLength: 100\n"), "%s", out)
}
