package train

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

var update = flag.Bool("update", false, "rewrite golden files")

func cases(t *testing.T) []Case {
	t.Helper()
	e := env(t, 100)
	return []Case{
		{Name: "app-a", Chain: "matMul:100", App: e.Cluster().App(0), CPUTarget: 0.7},
		{Name: "app-b", Chain: "matMul:100", App: e.Cluster().App(0)},
	}
}

func TestCompare(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	var seen []Result
	cfg := CompareConfig{
		Profile: prof, Episodes: map[string]int{DDPG: 3, PPO: 2, PPOContinuous: 2}, EvalEpisodes: 2, Seed: 3, Workers: 2,
	}
	cfgSeen := cfg
	cfgSeen.Progress = func(r Result) { seen = append(seen, r) }
	cfgSeen.Workers = 1
	res, err := Compare(context.Background(), cases(t), cfgSeen)
	require.NoError(t, err)
	require.Len(t, res, 6)
	assert.Len(t, seen, 6)
	for i, r := range res {
		assert.Equal(t, []string{"app-a", "app-b"}[i/3], r.App)
		assert.Equal(t, Algos()[i%3], r.Algo)
		assert.Len(t, r.Curve, cfg.Episodes[r.Algo])
		assert.Equal(t, r.Wins, r.Agent.Reward >= r.Baseline.Reward && r.Agent.SLOViolations <= r.Baseline.SLOViolations)
		assert.Greater(t, r.Baseline.Reward, 0.0)
		assert.Equal(t, "p99 ≤ 20 ms", r.SLO)
	}
	// The baseline is scored once per case: same for every algorithm.
	assert.Equal(t, res[0].Baseline, res[2].Baseline)

	// Parallel workers give the same results (each case owns its seeds).
	again, err := Compare(context.Background(), cases(t), cfg)
	require.NoError(t, err)
	for i := range res {
		res[i].Seconds, again[i].Seconds = 0, 0
	}
	assert.Equal(t, res, again)
}

func TestCompareErrors(t *testing.T) {
	prof, err := calibration.Default()
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		cfg  CompareConfig
		want string
	}{
		"profile":  {CompareConfig{}, "no calibration profile"},
		"algo":     {CompareConfig{Profile: prof, Algos: []string{"sarsa"}}, `unknown algorithm "sarsa"`},
		"episodes": {CompareConfig{Profile: prof, Algos: []string{PPO}, Episodes: map[string]int{PPO: 0}}, "ppo: 0 training episodes"},
	} {
		_, err := Compare(context.Background(), cases(t), tc.cfg)
		assert.ErrorContains(t, err, tc.want, name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Compare(ctx, cases(t), CompareConfig{Profile: prof, Episodes: map[string]int{DDPG: 1, PPO: 1, PPOContinuous: 1}})
	assert.ErrorIs(t, err, context.Canceled)
}

// TestBaselineScoreSeeds checks the baseline's scored episodes use the seeds
// agents are scored with, after as many warm-up episodes.
func TestBaselineScoreSeeds(t *testing.T) {
	f, ok := baselines.Find("static")
	require.True(t, ok)
	e := env(t, 10)
	s, err := BaselineScore(context.Background(), e, f, 0, 0, 30*time.Second, 7, 3)
	require.NoError(t, err)
	// A static allocation has no memory: scoring the same seeds directly
	// gives the same numbers.
	rec, err := f.New(recommender.Bounds{}, 30*time.Second, 0.8)
	require.NoError(t, err)
	eps, err := Recommend(context.Background(), e, rec, 30*time.Second, Config{Episodes: 3, Seed: EvalSeed(7)})
	require.NoError(t, err)
	assert.Equal(t, Summarise(eps), s)
}

func TestReportGolden(t *testing.T) {
	score := func(r, v float64) Score {
		return Score{Reward: r, SLOViolations: v, CPUUtil: 0.4, MemoryUtil: 0.1, Replicas: 2, CPU: 0.5, Memory: 512 << 20}
	}
	rep := Report{
		Command: "aware compare --apps 2", Seed: 1, Baseline: "hpa+vpa", Shapes: "nasa: synthetic",
		Results: []Result{
			{App: "app-0005", Chain: "matMul:100", SLO: "p99 ≤ 20 ms", Algo: DDPG, Episodes: 10, Agent: score(110, 1), Baseline: score(100, 5), Wins: true, Curve: []float64{90, 100, 110}},
			{App: "app-0009", Chain: "readFile:4096", SLO: "≥ 40 req/s", Algo: DDPG, Episodes: 10, Agent: score(99, 0), Baseline: score(100, 5), Curve: []float64{90, 95, 99}},
		},
	}
	var b bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&b))
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), b.String())
	assert.Equal(t, []Tally{{Algo: DDPG, Wins: 1, Cases: 2, AgentReward: 104.5, BaselineReward: 100, AgentViolations: 0.5, BaselineViolations: 5}}, rep.Tallies())

	dir := t.TempDir()
	require.NoError(t, rep.Save(dir))
	for _, f := range []string{"results.json", "results.md", "curves-ddpg.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		assert.NoError(t, err, f)
	}
}
