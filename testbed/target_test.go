package testbed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/testbed/manifests"
)

// What each target answers, chosen from its name.
func TestTargetsAnswer(t *testing.T) {
	tests := []struct {
		name             Target
		kubeconfigFromUp bool
		podsInCluster    bool // forTarget keeps the components that run as pods
		previewNeedsKC   bool
		plugins          []plugin
	}{
		{TargetLocal, true, false, true, nil},
		{TargetKubeconfig, false, true, false, nil},
		{TargetKind, true, true, false, nil},
		{TargetGKE, false, true, false, []plugin{{"gcp", GCPPluginVersion}}},
	}
	require.Len(t, targets, len(tests), "a target without a row here")
	for i, tc := range tests {
		t.Run(string(tc.name), func(t *testing.T) {
			assert.Equal(t, tc.name, Targets[i], "Targets keeps the table's order")
			tg, ok := targetOf(tc.name)
			require.True(t, ok)
			assert.Equal(t, tc.name, tg.name())
			assert.NotEmpty(t, tg.help())
			assert.Contains(t, TargetHelp(), `"`+string(tc.name)+`" (`+tg.help()+`)`)
			assert.Equal(t, tc.kubeconfigFromUp, tg.kubeconfigFromUp())
			cfg := DefaultConfig()
			cfg.Target = tc.name
			want := manifests.Components{}
			if tc.podsInCluster {
				want = cfg.Options.Components
			}
			assert.Equal(t, want, cfg.ForTarget().Options.Components)
			if tc.previewNeedsKC {
				assert.ErrorContains(t, cfg.Previewable(), "needs --kubeconfig")
				cfg.Kubeconfig = "/k"
			}
			assert.NoError(t, cfg.Previewable())
			assert.Equal(t, tc.plugins, tg.plugins())
			assert.Equal(t, tg, stackTarget(tc.name))
		})
	}
	_, ok := targetOf("eks")
	assert.False(t, ok)
	assert.Equal(t, kubeconfigTarget{}, stackTarget(""), "a stack without a known target holds its resources: down destroys them")
	assert.Equal(t, `where: "local" (the Docker-free control plane, started in --dir), "kubeconfig" (any cluster), "kind" (a kind cluster on the machine's container engine) or "gke" (a GKE cluster made by the stack)`, TargetHelp())
}

// The local target's supervisor gets the controller's step and the time
// scale.
func TestTargetLocalSupervisorArgs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Options.Step, cfg.TimeScale = 2*time.Second, 15
	args := (&Driver{Dir: "/d", Traces: "/t"}).supervisorArgs(cfg)
	assert.Equal(t, []string{"testbed", "local-run"}, args[:2])
	assert.Contains(t, args, "--step=2s")
	assert.Contains(t, args, "--time-scale=15")
	assert.Contains(t, (&Driver{Dir: "/d"}).supervisorArgs(DefaultConfig()), "--time-scale=10", "the default")
}
