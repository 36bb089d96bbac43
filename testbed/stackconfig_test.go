package testbed_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/testbed"
)

// withStackConfig runs fn in a mocked program whose stack configuration is
// m (key → value), as the engine passes it.
func withStackConfig(t *testing.T, m map[string]string, fn func(ctx *pulumi.Context) error) error {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	t.Setenv("PULUMI_CONFIG", string(b))
	return pulumi.RunErr(fn, pulumi.WithMocks(testbed.Project, "test", &mocks{}))
}

func TestStackConfigRoundTrip(t *testing.T) {
	cfg := config(testbed.TargetKubeconfig, 7)
	cfg.Context, cfg.SelectSeed, cfg.PoolSeed = "kind-aware", 9, 3
	cfg.Options.LoadScale, cfg.Options.LoadDuration, cfg.Options.Step = 0.5, 2*time.Hour, 30*time.Second
	cfg.Options.Agents, cfg.Options.Trace = false, "poisson"
	cfg.Options.Components.Load = false
	cfg.Options.Images.Aware = "registry.local/aware@sha256:0123"
	cfg.Options.AppOptions.UpdateMode = "Recreate"
	cfg.Kind = testbed.KindConfig{NodeImage: "kindest/node:v1.35.0", Workers: 3}
	cfg.GKE = testbed.GKEConfig{Project: "p", Location: "europe-west1", MachineType: "n2-standard-16", Nodes: 7, DiskGB: 50}
	cfg.TimeScale = 2.5
	sc, err := cfg.StackConfig()
	require.NoError(t, err)
	m := map[string]string{}
	for k, v := range sc {
		m[k] = v.Value
		assert.Equal(t, strings.HasSuffix(k, ":credentials"), v.Secret, k)
	}
	var got testbed.Config
	require.NoError(t, withStackConfig(t, m, func(ctx *pulumi.Context) error {
		got, err = testbed.ConfigFromStack(ctx)
		return err
	}))
	assert.Equal(t, cfg, got)
}

func TestStackConfigErrors(t *testing.T) {
	for key, v := range map[string]string{"apps": "many", "loadDuration": "1 day", "components": `{"grafana":true}`, "agents": "yes please", "kind": `{"workers":"two"}`, "gke": `{"zone":"x"}`, "timeScale": "fast"} {
		err := withStackConfig(t, map[string]string{"aware-testbed:" + key: v}, func(ctx *pulumi.Context) error {
			_, err := testbed.ConfigFromStack(ctx)
			return err
		})
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), "stack config aware-testbed:"+key, key)
	}
}

// The Pulumi.yaml program is StackProgram, the function the driver runs.
func TestPulumiYAMLProgramIsStackProgram(t *testing.T) {
	y, err := os.ReadFile("Pulumi.yaml")
	require.NoError(t, err)
	assert.Contains(t, string(y), "name: "+testbed.Project)
	assert.Contains(t, string(y), "runtime:\n  name: go")
	assert.Contains(t, string(y), "main: program/")
	main, err := os.ReadFile("program/main.go")
	require.NoError(t, err)
	assert.Contains(t, string(main), "pulumi.Run(testbed.StackProgram)")
}
