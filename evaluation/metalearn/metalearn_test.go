package metalearn

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/gym"
)

// world is a 100-application pool on synthetic shapes.
func world() lab.Config {
	c := lab.DefaultConfig()
	c.PoolSize, c.Traces, c.ShapeSeed = 100, "", 3
	return c
}

// tinyTrain is the smallest meta-training: 2 applications, 2 rounds,
// bundles of 2, a step of the identification objective every episode.
func tinyTrain(dir string) TrainConfig {
	return TrainConfig{Lab: world(), Apps: 2, Rounds: 2, M: 2, Seed: 3, Dir: dir, MetaLR: PaperMetaLR,
		ContrastEvery: 1, Contrast: meta.ContrastConfig{Tasks: 2, Views: 1, Temperature: 0.1, LR: 3e-4}}
}

// TestTrainAndEval runs the smallest meta-training, resumes it for a
// third round, and evaluates it on 3 test-split applications: the
// plumbing, files and resumption, not what the embedding learns (issue
// 16's measurements).
func TestTrainAndEval(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the default-size meta learner")
	}
	ctx := context.Background()
	out := t.TempDir()
	c := tinyTrain(out)
	var stdout bytes.Buffer
	var last [2]int
	c.Bar = func(label string, total int) (func(int), func()) {
		assert.Equal(t, "meta-train", label)
		return func(done int) { last = [2]int{done, total} }, func() {}
	}
	require.NoError(t, Train(ctx, c, &stdout))
	assert.Contains(t, stdout.String(), "on 2 train-split applications × 2 rounds")
	assert.Contains(t, stdout.String(), "4 episodes in")
	assert.Equal(t, [2]int{4, 4}, last, "progress to the end")

	c.Rounds, c.Bar = 3, nil
	stdout.Reset()
	require.NoError(t, Train(ctx, c, &stdout))
	assert.Contains(t, stdout.String(), "resumed after round 2")
	assert.Contains(t, stdout.String(), "2 episodes in")
	lines, err := os.ReadFile(filepath.Join(out, RoundsFile))
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(lines)), "\n")
	require.Len(t, rows, 3)
	var r Round
	require.NoError(t, json.Unmarshal([]byte(rows[2]), &r))
	assert.Equal(t, 2, r.Round)
	assert.Positive(t, r.ContrastLoss, "the identification objective ran")
	stdout.Reset()
	require.NoError(t, Train(ctx, c, &stdout))
	assert.Contains(t, stdout.String(), "already holds all 3 rounds; nothing to do")

	for _, tc := range []struct {
		mod  func(*TrainConfig)
		want string
	}{
		{func(c *TrainConfig) { c.Seed = 4 }, "holds a run of seed 3"},
		{func(c *TrainConfig) { c.Lab.Mapping = gym.Absolute }, `holds a run with "relative" actions, not absolute`},
	} {
		bad := c
		tc.mod(&bad)
		assert.ErrorContains(t, Train(ctx, bad, io.Discard), tc.want)
	}

	stdout.Reset()
	ev := EvalConfig{Lab: world(), From: out, Apps: 3, Episodes: 1, M: 2, Seed: 1, Shift: time.Hour, Windows: WindowsShift}
	ev.Lab.ShapeSeed = 1
	var stages []string
	ev.Bar = func(label string, total int) (func(int), func()) {
		return func(done int) {
			if done == total {
				stages = append(stages, label)
			}
		}, func() {}
	}
	res, err := Eval(ctx, ev, &stdout)
	require.NoError(t, err)
	assert.Equal(t, []string{"embedding", "pairs"}, stages)
	assert.Contains(t, stdout.String(), "identification by nearest neighbour")
	var saved Evaluation
	b, err := os.ReadFile(filepath.Join(out, "eval.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &saved))
	assert.Equal(t, res.Hits, saved.Hits)
	assert.Equal(t, 3, saved.Rounds)
	assert.Len(t, saved.Hits, 3)
	assert.Equal(t, 6, saved.Pairs, "ordered pairs of 3 applications")
	assert.Equal(t, 120, saved.ShiftSteps)
	assert.FileExists(t, filepath.Join(out, "eval.md"))

	ev.From = filepath.Join(out, "none")
	_, err = Eval(ctx, ev, io.Discard)
	assert.ErrorContains(t, err, "no meta.ckpt")
}

// TestTrainValidation: HeldOut holds out the applications after those
// trained on, logs their identification after every round, and leaves the
// training run as it is without it (the same checkpoints).
func TestTrainValidation(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the default-size meta learner")
	}
	run := func(validate int) string {
		c := tinyTrain(t.TempDir())
		c.HeldOut, c.HeldOutEpisodes, c.Verbose = validate, 1, true
		var stdout bytes.Buffer
		require.NoError(t, Train(context.Background(), c, &stdout))
		assert.Contains(t, stdout.String(), "round 1: mean episode reward")
		if validate > 0 {
			assert.Contains(t, stdout.String(), "held-out identification")
		}
		return c.Dir
	}
	plain, validated := run(0), run(3)
	lines, err := os.ReadFile(filepath.Join(validated, RoundsFile))
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(lines)), "\n")
	require.Len(t, rows, 2)
	for _, row := range rows {
		var r Round
		require.NoError(t, json.Unmarshal([]byte(row), &r))
		require.NotNil(t, r.Validation)
		require.NotNil(t, r.ValidationUntrained)
		assert.Contains(t, []float64{0, 1.0 / 3, 2.0 / 3, 1}, *r.Validation, "a share of 3 applications")
		assert.Positive(t, r.ValidationSeconds)
	}
	for _, name := range []string{"meta.ckpt", "agent-000002.ckpt"} {
		a, err := os.ReadFile(filepath.Join(plain, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(validated, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, b), "%s: the same training with and without validation", name)
	}
}

func TestConfigsRefused(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*TrainConfig)
		want string
	}{
		{func(c *TrainConfig) { c.Apps = 0 }, "--apps 0, --rounds 2 and --m 2 must be positive"},
		{func(c *TrainConfig) { c.ContrastEvery = -1 }, "contrast-every -1 not negative"},
		{func(c *TrainConfig) { c.HeldOut, c.HeldOutEpisodes = 1, 1 }, "validate 1"},
		{func(c *TrainConfig) { c.HeldOut, c.HeldOutEpisodes = 200, 1 }, "holds out applications after the --apps 2 trained on"},
		{func(c *TrainConfig) { c.MetaLR = -1 }, "meta-lr -1 must be finite and not negative"},
		{func(c *TrainConfig) { c.MetaLR, c.ContrastEvery = 0, 0 }, "would leave the meta learner untrained"},
		{func(c *TrainConfig) { c.Lab.PoolSize = 0 }, "need at least one application"},
	} {
		c := tinyTrain(t.TempDir())
		tc.mod(&c)
		assert.ErrorContains(t, Train(context.Background(), c, io.Discard), tc.want)
	}
	ok := EvalConfig{Lab: world(), From: t.TempDir(), Apps: 3, Episodes: 1, M: 2, Seed: 1, Windows: WindowsRandom}
	for _, tc := range []struct {
		mod  func(*EvalConfig)
		want string
	}{
		{func(c *EvalConfig) { c.Apps = 1 }, "apps 1 (at least 2)"},
		{func(c *EvalConfig) { c.Windows = "noon" }, `windows "noon": want random or shift`},
		{func(c *EvalConfig) { c.Shift = -time.Hour }, "shift -1h0m0s must be positive"},
		{func(c *EvalConfig) {}, "no meta.ckpt"},
	} {
		c := ok
		tc.mod(&c)
		_, err := Eval(context.Background(), c, io.Discard)
		assert.ErrorContains(t, err, tc.want)
	}
}
