package train

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

func TestTrainApp(t *testing.T) {
	for _, algo := range []string{"ddpg", "ppo", "ppo-continuous"} {
		out := t.TempDir()
		var buf bytes.Buffer
		cfg := TrainAppConfig{Algo: algo, App: "app-0003", PoolSeed: 1, Episodes: 2, Seed: 1, Step: 30 * time.Second, Traces: filepath.Join(out, "none"), Out: out, Plot: "curve.svg", Verbose: true}
		require.NoError(t, TrainApp(context.Background(), cfg, &buf), algo)
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
}

func TestTrainAppBar(t *testing.T) {
	out := t.TempDir()
	var label string
	var last, ended int
	cfg := TrainAppConfig{Algo: "ddpg", App: "app-0001", PoolSeed: 1, Episodes: 2, Seed: 1, Step: 30 * time.Second, Traces: filepath.Join(out, "none"), Out: out, Plot: "curve.png",
		Bar: func(l string, total int) (func(int), func()) {
			label = l
			return func(d int) { last = d }, func() { ended++ }
		}}
	require.NoError(t, TrainApp(context.Background(), cfg, &bytes.Buffer{}))
	assert.Equal(t, "ddpg", label)
	assert.Equal(t, 2, last, "the bar reaches the last episode")
	assert.Equal(t, 1, ended)
}

func TestTrainAppConfigValidate(t *testing.T) {
	base := TrainAppConfig{Algo: "ddpg", App: "app-0001", Episodes: 1, Step: 30 * time.Second, Out: t.TempDir(), Plot: "curve.png"}
	require.NoError(t, base.Validate())
	for _, bad := range []struct {
		set func(*TrainAppConfig)
		err string
	}{
		{func(f *TrainAppConfig) { f.Algo = "sarsa" }, "--algo"},
		{func(f *TrainAppConfig) { f.App = "web" }, `--app "web": want a pool name like app-0001`},
		{func(f *TrainAppConfig) { f.App = "app-9999" }, `--app "app-9999": not in the pool, which holds app-0001 to app-1000`},
		{func(f *TrainAppConfig) { f.App = "app-0000" }, `--app "app-0000": want a pool name`},
		{func(f *TrainAppConfig) { f.Episodes = -1 }, "--episodes -1"},
		{func(f *TrainAppConfig) { f.Plot = "curve.gif" }, "--plot"},
	} {
		cfg := base
		bad.set(&cfg)
		assert.ErrorContains(t, cfg.Validate(), bad.err)
		assert.ErrorContains(t, TrainApp(context.Background(), cfg, &bytes.Buffer{}), bad.err)
	}
}
