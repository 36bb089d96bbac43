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

	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/generator"
)

func TestRunMainJob(t *testing.T) {
	out := t.TempDir()
	var stdout, progress bytes.Buffer
	tune := tuneFlags{window: time.Hour, warmup: 10 * time.Minute, maxViolations: 0.01}
	fl := runFlags{apps: 20, seed: 3, duration: 2 * time.Hour, step: 30 * time.Second, traces: filepath.Join(out, "no-traces"), out: out, tune: tune}
	require.NoError(t, runMain(context.Background(), &stdout, &progress, fl))
	for _, b := range []string{"static", "hpa", "vpa", "hpa+vpa", "hpa+vpa (default target)"} {
		assert.Contains(t, stdout.String(), "| "+b+" |")
	}
	assert.Contains(t, progress.String(), "100%")
	var rep baselines.Report
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rep))
	assert.Equal(t, 20, rep.Apps)
	assert.Equal(t, 240, rep.Steps)
	assert.Len(t, rep.Results, 5)
	assert.Equal(t, "synthetic", rep.Shapes["nasa"])
	assert.Contains(t, rep.Command, "--tune-window 1h0m0s --tune-warmup 10m0s")
	apps, err := generator.ReadDir(filepath.Join(out, "pool"))
	require.NoError(t, err)
	require.Len(t, apps, 20)
	for _, a := range apps {
		require.NotNil(t, a.Tuning, a.Name())
		assert.Equal(t, "1h0m0s", a.Tuning.Window)
		assert.Contains(t, baselines.DefaultTuneTargets(), a.Profile.Targets.CPU, "%s's target is a candidate", a.Name())
	}
	summary, err := os.ReadFile(filepath.Join(out, "pool", "summary.md"))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "HPA+VPA baseline's CPU targets")

	// Same seed, same numbers.
	var again bytes.Buffer
	fl.out = t.TempDir()
	require.NoError(t, runMain(context.Background(), &again, &progress, fl))
	data2, err := os.ReadFile(filepath.Join(fl.out, "results.json"))
	require.NoError(t, err)
	var rep2 baselines.Report
	require.NoError(t, json.Unmarshal(data2, &rep2))
	for i := range rep.Results {
		rep.Results[i].Seconds, rep2.Results[i].Seconds = 0, 0
	}
	assert.Equal(t, rep.Results, rep2.Results)

	for _, bad := range []runFlags{
		{apps: 0, duration: time.Hour, step: time.Minute},
		{apps: 1, duration: time.Second, step: time.Minute},
		{apps: 1, duration: time.Hour, step: time.Minute, only: []string{"nope"}, out: t.TempDir(), tune: tune},
		{apps: 1, duration: time.Hour, step: time.Minute, out: t.TempDir(), tune: tuneFlags{window: time.Hour, warmup: time.Hour}},
		{apps: 1, duration: time.Hour, step: time.Minute, out: t.TempDir(), tune: tuneFlags{window: time.Hour, maxViolations: 1}},
	} {
		assert.Error(t, runMain(context.Background(), &stdout, &progress, bad))
	}
}

func TestSimValidateSimulateOnly(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"sim", "validate", "--simulate-only", "--n", "2", "--window", "5s", "--traces", filepath.Join(t.TempDir(), "none")})
	require.NoError(t, root.Execute())
	assert.Contains(t, out.String(), "replaying a synthetic day instead")
	assert.Contains(t, out.String(), "| app-0002 | 1.00 | synthetic |")
	assert.NotContains(t, out.String(), "Median absolute percentage error", "nothing to compare without real runs")
}

func TestTrainCommand(t *testing.T) {
	for _, algo := range []string{"ddpg", "ppo", "ppo-continuous"} {
		out := t.TempDir()
		var buf bytes.Buffer
		fl := trainFlags{algo: algo, app: "app-0003", poolSeed: 1, episodes: 2, seed: 1, step: 30 * time.Second, traces: filepath.Join(out, "none"), out: out, plot: "curve.svg", verbose: true}
		require.NoError(t, runTrain(context.Background(), &buf, fl), algo)
		assert.Contains(t, buf.String(), "episode    2/2", algo)
		assert.Contains(t, buf.String(), "greedy policy over 5 episodes", algo)
		svg, err := os.ReadFile(filepath.Join(out, "app-0003-"+algo, "curve.svg"))
		require.NoError(t, err, algo)
		assert.Contains(t, string(svg), "HPA+VPA", algo)
		data, err := os.ReadFile(filepath.Join(out, "app-0003-"+algo, "episodes.json"))
		require.NoError(t, err)
		var got struct {
			Episodes []map[string]any `json:"episodes"`
		}
		require.NoError(t, json.Unmarshal(data, &got))
		assert.Len(t, got.Episodes, 2)
		_, err = os.Stat(filepath.Join(out, "app-0003-"+algo, "agent.ckpt"))
		assert.NoError(t, err)
	}
	var buf bytes.Buffer
	base := trainFlags{algo: "ddpg", app: "app-0001", episodes: 1, step: 30 * time.Second, out: t.TempDir(), plot: "curve.png"}
	for _, bad := range []struct {
		set func(*trainFlags)
		err string
	}{
		{func(f *trainFlags) { f.algo = "sarsa" }, "--algo"},
		{func(f *trainFlags) { f.app = "web" }, `--app "web": want a pool name like app-0001`},
		{func(f *trainFlags) { f.app = "app-9999" }, `--app "app-9999": not in the pool, which holds app-0001 to app-1000`},
		{func(f *trainFlags) { f.app = "app-0000" }, `--app "app-0000": want a pool name`},
		{func(f *trainFlags) { f.episodes = -1 }, "--episodes -1"},
		{func(f *trainFlags) { f.plot = "curve.gif" }, "--plot"},
	} {
		fl := base
		bad.set(&fl)
		assert.ErrorContains(t, runTrain(context.Background(), &buf, fl), bad.err)
	}
}

func TestCompareCommand(t *testing.T) {
	out := t.TempDir()
	var buf, progress bytes.Buffer
	fl := compareFlags{apps: 2, poolSeed: 1, seed: 1, algos: []string{"ddpg", "ppo"}, episodes: map[string]int{"ddpg": 2, "ppo": 2},
		scored: 1, workers: 2, step: 30 * time.Second, traces: filepath.Join(out, "none"), out: out}
	require.NoError(t, runCompare(context.Background(), &buf, &progress, fl))
	assert.Contains(t, progress.String(), "on 2 test-split applications (app-0005 app-0009)")
	assert.Contains(t, buf.String(), "| app-0009 | imageCompress:320→objectWrite:786432→objectRead:393216 | p99 ≤ 117.6 ms | ppo | 2 |")
	assert.Contains(t, buf.String(), "--episodes ddpg=2,ppo=2")
	for _, f := range []string{"results.json", "results.md", "curves-ddpg.png", "curves-ppo.png"} {
		_, err := os.Stat(filepath.Join(out, f))
		assert.NoError(t, err, f)
	}
	for _, bad := range []func(*compareFlags){
		func(f *compareFlags) { f.apps = 0 },
		func(f *compareFlags) { f.apps = 500 },
		func(f *compareFlags) { f.algos = []string{"sarsa"} },
		func(f *compareFlags) { f.episodes = map[string]int{"ppo-continuous": 3} },
		func(f *compareFlags) { f.episodes = map[string]int{"ddpg": 0} },
		func(f *compareFlags) { f.scored = 0 },
	} {
		g := fl
		bad(&g)
		assert.Error(t, runCompare(context.Background(), &buf, &progress, g))
	}
}
