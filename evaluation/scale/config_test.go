package scale

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

func TestConfigDefaultsAndErrors(t *testing.T) {
	valid := Config{Dir: "x", Binaries: cluster.Binaries{APIServer: "/bin/true"}, Controller: []string{"/bin/aware", "controller"}}
	got, err := valid.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 1000, got.Apps)
	assert.Zero(t, got.Nodes, "sized by Run for the pool")
	assert.Equal(t, 4, got.Rounds)
	assert.Equal(t, 15*time.Second, got.Step)
	assert.Equal(t, 5*time.Second, got.Scrape)
	assert.Equal(t, time.Second, got.Tick)
	assert.Equal(t, int64(1), got.PoolSeed)
	assert.Equal(t, uint64(1), got.Seed)
	assert.Equal(t, DefaultTargets(), got.Targets)
	assert.NotNil(t, got.Log)

	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"apps", func(c *Config) { c.Apps = -1 }, "Apps -1"},
		{"nodes", func(c *Config) { c.Nodes = -1 }, "Nodes -1"},
		{"step", func(c *Config) { c.Step = 500 * time.Millisecond }, "Step 500ms"},
		{"scrape above step", func(c *Config) { c.Step, c.Scrape = 2*time.Second, 3*time.Second }, "Scrape 3s"},
		{"dir", func(c *Config) { c.Dir = "" }, "Dir"},
		{"binaries", func(c *Config) { c.Binaries = cluster.Binaries{} }, "Binaries"},
		{"controller", func(c *Config) { c.Controller = nil }, "Controller"},
		{"targets", func(c *Config) { c.Targets = Targets{CPU: 1} }, "Targets"},
		{"agents without a program", func(c *Config) { c.Agents = []string{""} }, "Agents"},
		{"agents with one-step episodes", func(c *Config) { c.Agents, c.AgentEpisode = []string{"/bin/aware", "agents"}, 1 }, "AgentEpisode 1"},
		{"agents window", func(c *Config) { c.Agents, c.AgentWindow = []string{"/bin/aware", "agents"}, 1001 }, "AgentWindow 1001"},
		{"agents without their targets", func(c *Config) {
			c.Agents, c.Targets = []string{"/bin/aware", "agents"}, Targets{CPU: 1, RSS: 1, Round: time.Second}
		}, "Targets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.edit(&c)
			_, err := c.withDefaults()
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNodesNeeded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pods        int
		cpu, memory float64
		want        int
	}{
		{"small pools", 30, 23, 8 << 30, 1},
		{"CPU bound: the default pool", 1489, 1144.2, 372.2 * (1 << 30), 36},
		{"memory bound", 100, 10, 1024 << 30, 8},
		{"pod bound", 3000, 10, 1 << 30, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, nodesNeeded(tc.pods, tc.cpu, tc.memory))
		})
	}
}

// TestPoolObjectsWithAgents: with agents the MPAs name the runner, are
// valid, bootstrap for the window, then act ONLINE and never reach
// SERVING; without, they use the built-in recommender.
func TestPoolObjectsWithAgents(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	_, objs, err := poolObjects(prof, 5, 1, 4, 3)
	require.NoError(t, err)
	require.Len(t, objs, 5)
	for _, o := range objs {
		pol, err := autoscaler.PolicyOf(o.MPA)
		require.NoError(t, err, o.MPA.Name)
		assert.True(t, pol.External())
		assert.Equal(t, agents.DefaultName, pol.Recommender)
		require.NotNil(t, pol.Agent)
		assert.True(t, pol.Agent.Bootstraps())
		assert.Equal(t, 4, pol.Agent.EpisodeLength)
		stage := autoscaler.NextStage(v1alpha1.StageInitialized, *pol.Agent, nil)
		assert.Equal(t, v1alpha1.StageOffline, stage)
		assert.Equal(t, v1alpha1.StageOffline, autoscaler.NextStage(stage, *pol.Agent, []float64{0.5, 0.5}), "a window not yet full")
		stage = autoscaler.NextStage(stage, *pol.Agent, []float64{0.5, 0.5, 0.5})
		assert.Equal(t, v1alpha1.StageOnline, stage)
		assert.Equal(t, v1alpha1.StageOnline, autoscaler.NextStage(stage, *pol.Agent, []float64{7.99, 7.99, 7.99}), "the best reachable episodes do not serve")
	}
	_, objs, err = poolObjects(prof, 2, 1, 0, 0)
	require.NoError(t, err)
	for _, o := range objs {
		pol, err := autoscaler.PolicyOf(o.MPA)
		require.NoError(t, err)
		assert.False(t, pol.External(), "the built-in HPA+VPA")
	}
}
