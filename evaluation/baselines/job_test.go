package baselines

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/progress"
	"github.com/aware-autoscaler/aware/generator"
)

// countingBar is a Bar that writes, as each bar ends, its label and
// whether it reached its total.
func countingBar(w *strings.Builder) progress.Bar {
	return func(label string, total int) (func(int), func()) {
		last := 0
		return func(done int) { last = done }, func() {
			state := "short"
			if last == total {
				state = "100%"
			}
			fmt.Fprintf(w, "%s %s\n", label, state)
		}
	}
}

func TestRunJob(t *testing.T) {
	out := t.TempDir()
	var stdout, progress bytes.Buffer
	var bars strings.Builder
	tune := Tuning{Window: time.Hour, Warmup: 10 * time.Minute, MaxViolations: 0.01}
	cfg := JobConfig{Apps: 20, Seed: 3, Duration: 2 * time.Hour, Step: 30 * time.Second, Traces: filepath.Join(out, "no-traces"), Out: out, Tune: tune, Bar: countingBar(&bars)}
	require.NoError(t, RunJob(context.Background(), cfg, &stdout, &progress))
	for _, b := range []string{"static", "hpa", "vpa", "hpa+vpa", "hpa+vpa (default target)"} {
		assert.Contains(t, stdout.String(), "| "+b+" |")
	}
	assert.Contains(t, bars.String(), "[tune]  hpa+vpa  100%")
	assert.Contains(t, bars.String(), "[5/5] hpa+vpa (default target) 100%")
	assert.Contains(t, progress.String(), "20 applications, 240 steps of 30s")
	var rep Report
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rep))
	assert.Equal(t, 20, rep.Apps)
	assert.Equal(t, 240, rep.Steps)
	assert.Len(t, rep.Results, 5)
	shapes, err := generator.LoadShapes(cfg.Traces, cfg.Step, cfg.Seed)
	require.NoError(t, err)
	assert.Equal(t, shapes.Origin, rep.Shapes, "no real traces in --traces")
	assert.Contains(t, rep.Command, "--tune-window 1h0m0s --tune-warmup 10m0s")
	apps, err := generator.ReadDir(filepath.Join(out, "pool"))
	require.NoError(t, err)
	require.Len(t, apps, 20)
	for _, a := range apps {
		require.NotNil(t, a.Tuning, a.Name())
		assert.Equal(t, "1h0m0s", a.Tuning.Window)
		assert.Contains(t, DefaultTuneTargets(), a.Profile.Targets.CPU, "%s's target is a candidate", a.Name())
	}
	summary, err := os.ReadFile(filepath.Join(out, "pool", "summary.md"))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "HPA+VPA baseline's CPU targets")

	// Same seed, same numbers; no bar drawn when Bar is nil.
	var again bytes.Buffer
	cfg.Out, cfg.Bar = t.TempDir(), nil
	require.NoError(t, RunJob(context.Background(), cfg, &again, &progress))
	data2, err := os.ReadFile(filepath.Join(cfg.Out, "results.json"))
	require.NoError(t, err)
	var rep2 Report
	require.NoError(t, json.Unmarshal(data2, &rep2))
	for i := range rep.Results {
		rep.Results[i].Seconds, rep2.Results[i].Seconds = 0, 0
	}
	assert.Equal(t, rep.Results, rep2.Results)
}

func TestJobConfigValidate(t *testing.T) {
	tune := Tuning{Window: time.Hour, Warmup: 10 * time.Minute, MaxViolations: 0.01}
	for _, tc := range []struct {
		cfg  JobConfig
		want string
	}{
		{JobConfig{Apps: 0, Duration: time.Hour, Step: time.Minute, Tune: tune}, "--apps 0"},
		{JobConfig{Apps: 1, Duration: time.Second, Step: time.Minute, Tune: tune}, "--step 1m0s and --duration 1s"},
		{JobConfig{Apps: 1, Duration: time.Hour, Step: time.Minute, Baselines: []string{"nope"}, Tune: tune}, `--baselines [nope]: none known ("static"`},
		{JobConfig{Apps: 1, Duration: time.Hour, Step: time.Minute, Tune: Tuning{Window: time.Hour, Warmup: time.Hour}}, "--tune-window 1h0m0s and --tune-warmup 1h0m0s"},
		{JobConfig{Apps: 1, Duration: time.Hour, Step: time.Minute, Tune: Tuning{Window: time.Hour, MaxViolations: 1}}, "--tune-max-violations 1"},
	} {
		assert.ErrorContains(t, tc.cfg.Validate(), tc.want)
		out := t.TempDir()
		tc.cfg.Out = out
		assert.ErrorContains(t, RunJob(context.Background(), tc.cfg, &bytes.Buffer{}, &bytes.Buffer{}), tc.want)
		entries, err := os.ReadDir(out)
		require.NoError(t, err)
		assert.Empty(t, entries, "a bad config writes nothing")
	}
	assert.NoError(t, JobConfig{Apps: 1, Duration: time.Hour, Step: time.Minute, Baselines: []string{"hpa"}, Tune: tune}.Validate())
}

func TestTuningArgs(t *testing.T) {
	assert.Equal(t, " --no-tune", Tuning{Off: true}.Args())
	assert.Equal(t, " --tune-window 24h0m0s --tune-warmup 1h0m0s --tune-max-violations 0.01", DefaultTuning().Args())
	tc, err := DefaultTuning().Config(30*time.Second, 7)
	require.NoError(t, err)
	assert.Equal(t, TuneConfig{Steps: 2880, Warmup: 120, MaxViolations: 0.01, Seed: 7, Step: 30 * time.Second}, tc)
}
