package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	fl := metaTrainFlags{apps: 2, rounds: 2, poolSize: 100, m: 2, poolSeed: 1, seed: 3, step: 30 * time.Second, traces: traces, out: out}
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

	fl.seed = 4
	assert.ErrorContains(t, runMetaTrain(context.Background(), &stdout, &progress, fl), "holds a run of seed 3")

	stdout.Reset()
	ev := metaEvalFlags{from: out, apps: 3, episodes: 1, poolSize: 100, m: 2, poolSeed: 1, seed: 1, shift: time.Hour, step: 30 * time.Second, traces: traces}
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

	ev.from = filepath.Join(out, "none")
	assert.ErrorContains(t, runMetaEval(context.Background(), &stdout, ev), "no meta.ckpt")
}
