package main

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
	"github.com/aware-autoscaler/aware/gym"
)

// TestMetaTrainAndEval runs the smallest meta-training (2 applications, 2
// rounds, bundles of 2), resumes it for a third round, and evaluates it on
// 3 test-split applications: the commands' plumbing, files and resumption,
// not what the embedding learns (issue 16's measurements).
func TestMetaTrainAndEval(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the default-size meta learner")
	}
	out := t.TempDir()
	traces := filepath.Join(out, "no-traces")
	pool := poolFlags{poolSize: 100, poolSeed: 1, step: 30 * time.Second, traces: traces}
	fl := metaTrainFlags{apps: 2, rounds: 2, m: 2, seed: 3, out: out, poolFlags: pool, metaLR: paperMetaLR,
		contrastEvery: 1, contrast: meta.ContrastConfig{Tasks: 2, Views: 1, Temperature: 0.1, LR: 3e-4}}
	var stdout, progress bytes.Buffer
	require.NoError(t, runMetaTrain(context.Background(), &stdout, &progress, fl))
	assert.Contains(t, stdout.String(), "on 2 train-split applications × 2 rounds")
	assert.Contains(t, stdout.String(), "4 episodes in")
	assert.Contains(t, progress.String(), "100%")

	fl.rounds = 3
	stdout.Reset()
	require.NoError(t, runMetaTrain(context.Background(), &stdout, &progress, fl))
	assert.Contains(t, stdout.String(), "resumed after round 2")
	assert.Contains(t, stdout.String(), "2 episodes in")
	lines, err := os.ReadFile(filepath.Join(out, "rounds.jsonl"))
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(lines)), "\n")
	require.Len(t, rows, 3)
	var last metaRound
	require.NoError(t, json.Unmarshal([]byte(rows[2]), &last))
	assert.Equal(t, 2, last.Round)
	assert.Positive(t, last.ContrastLoss, "the identification objective ran")

	fl.seed = 4
	assert.ErrorContains(t, runMetaTrain(context.Background(), &stdout, &progress, fl), "holds a run of seed 3")
	fl.seed, fl.mapping = 3, gym.Absolute
	assert.ErrorContains(t, runMetaTrain(context.Background(), &stdout, &progress, fl), `holds a run with "relative" actions, not absolute`)

	stdout.Reset()
	ev := metaEvalFlags{from: out, apps: 3, episodes: 1, m: 2, seed: 1, shift: time.Hour, windows: windowsShift, poolFlags: pool}
	require.NoError(t, runMetaEval(context.Background(), &stdout, ev))
	assert.Contains(t, stdout.String(), "identification by nearest neighbour")
	var res metaEval
	b, err := os.ReadFile(filepath.Join(out, "eval.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, 3, res.Rounds)
	assert.Len(t, res.Hits, 3)
	assert.Equal(t, 6, res.Pairs, "ordered pairs of 3 applications")
	assert.Equal(t, 120, res.ShiftSteps)

	stdout.Reset()
	ad := metaAdaptFlags{from: out, apps: 2, episodes: 3, source: 2, m: 2, seed: 1, window: 2, tolerance: 0.02, poolFlags: pool}
	require.NoError(t, runMetaAdapt(context.Background(), &stdout, &progress, ad))
	assert.Contains(t, stdout.String(), "| AWARE |")
	var rep adaptReport
	b, err = os.ReadFile(filepath.Join(out, "adapt", "adapt.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Apps, 2)
	assert.Equal(t, "relative", rep.Actions, "the meta run's mapping")
	for _, m := range adaptMethods {
		first := (rep.Apps[0].Methods[m].Rewards[0] + rep.Apps[0].Methods[m].Rewards[1] + rep.Apps[1].Methods[m].Rewards[0] + rep.Apps[1].Methods[m].Rewards[1]) / 4
		assert.InDelta(t, first, rep.Early[m], 1e-9, "%s: the first window's mean", m)
	}
	for _, a := range rep.Apps {
		for _, m := range adaptMethods {
			run := a.Methods[m]
			assert.Len(t, run.Rewards, 3, "%s %s: the same budget", a.Name, m)
			assert.LessOrEqual(t, run.Final, a.Reference, "%s %s: the reference is the best final reward", a.Name, m)
			assert.True(t, run.Converged >= 2 && run.Converged <= 3, "%s %s: converged after %d", a.Name, m, run.Converged)
		}
	}
	left, err := os.ReadDir(filepath.Join(out, "adapt"))
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"adapt.json", "adapt.md"}, names, "the agents' working copies are removed")
	ad.episodes = 1
	assert.ErrorContains(t, runMetaAdapt(context.Background(), &stdout, &progress, ad), "--episodes 1 at least --window 2")

	ev.from = filepath.Join(out, "none")
	assert.ErrorContains(t, runMetaEval(context.Background(), &stdout, ev), "no meta.ckpt")
}

// TestMetaTrainValidation: --validate holds out the applications after
// those trained on, logs their identification after every round, and
// leaves the training run as it is without it (the same checkpoints).
func TestMetaTrainValidation(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the default-size meta learner")
	}
	pool := poolFlags{poolSize: 100, poolSeed: 1, step: 30 * time.Second, traces: filepath.Join(t.TempDir(), "no-traces")}
	run := func(validate int) string {
		out := t.TempDir()
		fl := metaTrainFlags{apps: 2, rounds: 2, m: 2, seed: 3, out: out, poolFlags: pool, validate: validate, validateEpisodes: 1, verbose: true, metaLR: paperMetaLR,
			contrastEvery: 1, contrast: meta.ContrastConfig{Tasks: 2, Views: 1, Temperature: 0.1, LR: 3e-4}}
		var stdout, progress bytes.Buffer
		require.NoError(t, runMetaTrain(context.Background(), &stdout, &progress, fl))
		if validate > 0 {
			assert.Contains(t, stdout.String(), "held-out identification")
		}
		return out
	}
	plain, validated := run(0), run(3)
	lines, err := os.ReadFile(filepath.Join(validated, "rounds.jsonl"))
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(lines)), "\n")
	require.Len(t, rows, 2)
	for _, row := range rows {
		var r metaRound
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

	fl := metaTrainFlags{apps: 2, rounds: 1, m: 2, out: t.TempDir(), poolFlags: pool, validate: 1, validateEpisodes: 1, metaLR: paperMetaLR}
	assert.ErrorContains(t, runMetaTrain(context.Background(), io.Discard, io.Discard, fl), "--validate 1")
	fl.validate = 200
	assert.ErrorContains(t, runMetaTrain(context.Background(), io.Discard, io.Discard, fl), "holds out applications after the --apps 2 trained on")
	fl.validate, fl.metaLR = 0, -1
	assert.ErrorContains(t, runMetaTrain(context.Background(), io.Discard, io.Discard, fl), "--meta-lr -1 must be finite and not negative")
	fl.metaLR = 0
	assert.ErrorContains(t, runMetaTrain(context.Background(), io.Discard, io.Discard, fl), "would leave the meta learner untrained")
}
