package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestComparePool(t *testing.T) {
	out := t.TempDir()
	var buf, progress bytes.Buffer
	cfg := ComparePoolConfig{Apps: 2, PoolSeed: 1, Seed: 1, Algos: []string{"ddpg", "ppo"}, Episodes: map[string]int{"ddpg": 2, "ppo": 2},
		Scored: 1, Workers: 2, Step: 30 * time.Second, Traces: filepath.Join(out, "none"), Out: out}
	require.NoError(t, ComparePool(context.Background(), cfg, &buf, &progress))
	assert.Contains(t, progress.String(), "on 2 test-split applications (app-0005 app-0009)")
	assert.Contains(t, buf.String(), "| app-0009 | imageCompress:320→objectWrite:786432→objectRead:393216 | p99 ≤ 117.6 ms | ppo | 2 |")
	assert.Contains(t, buf.String(), "--episodes ddpg=2,ppo=2")
	for _, f := range []string{"results.json", "results.md", "curves-ddpg.png", "curves-ppo.png"} {
		_, err := os.Stat(filepath.Join(out, f))
		assert.NoError(t, err, f)
	}
	for _, bad := range []struct {
		set  func(*ComparePoolConfig)
		want string
	}{
		{func(f *ComparePoolConfig) { f.Apps = 0 }, "--apps 0: must be positive"},
		{func(f *ComparePoolConfig) { f.Apps = 500 }, "--apps 500: the pool has only"},
		{func(f *ComparePoolConfig) { f.Algos = []string{"sarsa"} }, `--algos: train: unknown algorithm "sarsa"`},
		{func(f *ComparePoolConfig) { f.Episodes = map[string]int{"ppo-continuous": 3} }, `--episodes: "ppo-continuous" is not among --algos ddpg,ppo`},
		{func(f *ComparePoolConfig) { f.Episodes = map[string]int{"ddpg": 0} }, "--episodes: ddpg=0 must be positive"},
		{func(f *ComparePoolConfig) { f.Scored = 0 }, "--scored 0: must be positive"},
	} {
		g := cfg
		bad.set(&g)
		assert.ErrorContains(t, ComparePool(context.Background(), g, &buf, &progress), bad.want)
	}
}
