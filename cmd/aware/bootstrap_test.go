package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBootstrapStudy runs the smallest study (one application, 4
// episodes, 2 of them recorded): the arms, their shared records and the
// report, not what bootstrapping achieves (issue 16's measurements).
func TestBootstrapStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("trains agents")
	}
	out := t.TempDir()
	fl := bootstrapFlags{apps: 1, episodes: 4, records: 2, updates: 70, simEpisodes: 3, workers: 2, seed: 1, out: out, phis: []float64{0, 0.05},
		poolFlags: poolFlags{poolSize: 100, poolSeed: 1, step: 30 * time.Second, traces: filepath.Join(out, "no-traces")}}
	var stdout, progress bytes.Buffer
	require.NoError(t, runBootstrap(context.Background(), &stdout, &progress, fl))
	assert.Contains(t, stdout.String(), "| bootstrapped: BCQ Φ=0 |")
	var rep bootstrapReport
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Apps, 1)
	app := rep.Apps[0]
	require.Len(t, app.Arms, 7)
	rule := app.Arms[armRule]
	assert.InDelta(t, (rule.Rewards[0]+rule.Rewards[1])/2, app.TOnline, 1e-9, "T_online is the fallback's reward over the records")
	for _, name := range []string{bcqArm(0), bcqArm(0.05), armOffline} {
		arm := app.Arms[name]
		require.Len(t, arm.Rewards, 4, name)
		assert.Equal(t, rule.Rewards[:2], arm.Rewards[:2], "%s: HPA+VPA acted while OFFLINE", name)
		assert.Equal(t, arm.Rewards[2], arm.SwitchReward, name)
		assert.NotZero(t, arm.OfflineMeanQ, "%s trained offline", name)
	}
	assert.Len(t, app.Arms[armNone].Rewards, 4)
	assert.Len(t, app.Arms[armNonePPO].Rewards, 4)
	fitted := app.Arms[armFitted]
	require.Len(t, fitted.Rewards, 4)
	assert.Equal(t, rule.Rewards[:2], fitted.Rewards[:2], "HPA+VPA acted while PPO trained in the fitted simulator")
	assert.Len(t, fitted.SimRewards, 3)
	require.NotNil(t, app.Fit)
	assert.Positive(t, app.Fit.HeldBack.CPURows, "the fit is measured on held-back records")
	assert.InEpsilon(t, app.Fit.TrueCPU, app.Fit.Fitted.Model.CPU, 0.2, "the fitted CPU per request")
	assert.Contains(t, stdout.String(), "| bootstrapped: PPO on the fitted simulator |")
	assert.Contains(t, stdout.String(), "| "+app.Name+" |")

	fl.simEpisodes = -1
	assert.ErrorContains(t, runBootstrap(context.Background(), &stdout, &progress, fl), "--sim-episodes -1")
	fl.simEpisodes = 0
	fl.phis = []float64{-1}
	assert.ErrorContains(t, runBootstrap(context.Background(), &stdout, &progress, fl), "--phi -1")
	fl.phis, fl.records = nil, 4
	assert.ErrorContains(t, runBootstrap(context.Background(), &stdout, &progress, fl), "--episodes 4 above --records")
}
