package lab

import (
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

func newLab(t *testing.T, mod ...func(*Config)) *Lab {
	t.Helper()
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.Traces = 60, "" // synthetic shapes: the same on every machine
	cfg.Tune.Steps, cfg.Tune.Warmup = 240, 20
	for _, m := range mod {
		m(&cfg)
	}
	l, err := New(cfg)
	require.NoError(t, err)
	return l
}

func TestLabPoolSplitsAndDraws(t *testing.T) {
	l := newLab(t)
	train, test := l.Split(generator.SplitTrain), l.Split(generator.SplitTest)
	assert.Len(t, append(train, test...), 60)
	assert.NotEmpty(t, test)
	a, err := l.Draw(generator.SplitTest, 3, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	b, err := l.Draw(generator.SplitTest, 3, rand.New(rand.NewPCG(1, 2)))
	require.NoError(t, err)
	assert.Equal(t, a, b, "a draw depends on its seed only")
	for _, n := range a {
		assert.Contains(t, test, n)
	}
	_, err = l.Draw(generator.SplitTest, 1000, rand.New(rand.NewPCG(1, 2)))
	assert.ErrorContains(t, err, "1000 test-split applications wanted, the pool of 60 (seed 1) has")
	_, _, err = l.App("app-9999")
	assert.ErrorContains(t, err, `no application "app-9999" in the pool of 60 (seed 1)`)
	for _, tr := range l.Traces() {
		assert.Contains(t, tr, "synthetic")
	}

	// TracesOf counts which of a study's applications each source drove.
	names := l.Split(generator.SplitTest)[:5]
	bySource := map[string]int{}
	for _, n := range names {
		a, _, err := l.App(n)
		require.NoError(t, err)
		bySource[a.Load.Source]++
	}
	of := l.TracesOf(append(names, names[0], "app-9999"))
	require.Len(t, of, len(l.Traces()))
	for i, tr := range l.Traces() {
		src, _, _ := strings.Cut(tr, ":")
		assert.Equal(t, fmt.Sprintf("%s (%d of 5 applications)", tr, bySource[src]), of[i], "repeats and unknown names not counted")
	}
}

func TestLabTraceFileReplacesEveryShape(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mine.txt")
	var b []byte
	for i := range 7200 {
		b = append(b, []byte(string(rune('1'+i%5))+"\n")...)
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
	l := newLab(t, func(c *Config) { c.Trace = path })
	for _, tr := range l.Traces() {
		assert.Contains(t, tr, "file: mine.txt")
	}
	empty := filepath.Join(dir, "empty.txt")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err := New(Config{PoolSize: 5, PoolSeed: 1, Step: 30 * time.Second, Trace: empty})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "empty.txt")
}

func TestAffects(t *testing.T) {
	l := newLab(t)
	for _, name := range l.Split(generator.SplitTest) {
		_, a, err := l.App(name)
		require.NoError(t, err)
		for _, sc := range sim.Scenarios() {
			ok, err := l.Affects(name, sc)
			require.NoError(t, err)
			changed := !slices.Equal(sc.Apply(a.Chain), a.Chain)
			assert.Equal(t, changed || sc.ChangesLoad(), ok, "%s under %s", name, sc)
		}
	}
	units, err := l.DrawAffectedUnits(generator.SplitTest, ScenarioNames(), 2, 1)
	require.NoError(t, err)
	again, err := l.DrawAffectedUnits(generator.SplitTest, ScenarioNames(), 2, 1)
	require.NoError(t, err)
	assert.Equal(t, units, again)
	for _, u := range units {
		sc, err := sim.ParseScenario(u.Scenario)
		require.NoError(t, err)
		ok, err := l.Affects(u.App, sc)
		require.NoError(t, err)
		assert.True(t, ok, "%s is drawn for %s, which does not change it", u.App, u.Scenario)
	}
	_, err = l.DrawAffectedUnits(generator.SplitTest, []string{"nope"}, 2, 1)
	assert.ErrorContains(t, err, `unknown scenario "nope"`)
}

// TestPoliciesTrainOnceAndReload: a policy is trained on the first Get;
// later Gets (also from a new Policies on the same folder, as a resumed
// study) load its checkpoint and act exactly as the first agent did.
func TestPoliciesTrainOnceAndReload(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	root := t.TempDir()
	p, err := OpenPolicies(root, l)
	require.NoError(t, err)
	app := l.Split(generator.SplitTest)[0]
	pol := Policy{App: app, Seed: 3, Episodes: 3}
	first, ag1, err := p.Get(ctx, pol)
	require.NoError(t, err)
	assert.Equal(t, 3, first.Training.Len())
	assert.FileExists(t, filepath.Join(p.Dir(), first.Checkpoint))

	p2, err := OpenPolicies(root, l)
	require.NoError(t, err)
	assert.Equal(t, p.Dir(), p2.Dir())
	again, ag2, err := p2.Get(ctx, pol)
	require.NoError(t, err)
	assert.Equal(t, first, again, "not retrained")
	env, err := p.Env(pol)
	require.NoError(t, err)
	s1, err := Score(ctx, env, ag1, l.cfg.Mapping, 42, 2)
	require.NoError(t, err)
	s2, err := Score(ctx, env, ag2, l.cfg.Mapping, 42, 2)
	require.NoError(t, err)
	assert.Equal(t, s1, s2)

	// Another lab configuration keeps its policies elsewhere.
	other, err := OpenPolicies(root, newLab(t, func(c *Config) { c.Noise = 0.2 }))
	require.NoError(t, err)
	assert.NotEqual(t, p.Dir(), other.Dir())

	_, _, err = p.Get(ctx, Policy{App: app, Episodes: 0})
	assert.ErrorContains(t, err, "episodes must be positive")
	_, _, err = p.Get(ctx, Policy{App: app, Episodes: 1, Scenario: "nope"})
	assert.ErrorContains(t, err, `unknown scenario "nope"`)
}

func TestRuleBasedUsesTheTunedTarget(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	app := l.Split(generator.SplitTest)[0]
	tuned, err := l.CPUTarget(ctx, app)
	require.NoError(t, err)
	assert.Contains(t, []float64{0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9}, tuned.Target)
	env, err := l.Env(app, 0)
	require.NoError(t, err)
	eps, err := l.RuleBased(ctx, env, app, 2, 7, nil)
	require.NoError(t, err)
	require.Len(t, eps, 2)
	env2, err := l.Env(app, 0)
	require.NoError(t, err)
	again, err := l.RuleBased(ctx, env2, app, 2, 7, nil)
	require.NoError(t, err)
	assert.Equal(t, eps, again, "the same seeds, the same episodes")
	var c Curve
	c.Add(eps...)
	m, err := c.Means(0, 2)
	require.NoError(t, err)
	assert.InDelta(t, (eps[0].Reward+eps[1].Reward)/2, m.Reward, 1e-12)
	_, err = c.Means(1, 3)
	assert.ErrorContains(t, err, "episodes [1, 3) of a curve of 2")
}

// A traces folder whose files appear (or vanish) gives other load shapes
// under the same configuration: the policies are kept apart and a study's
// cells of the other load are refused, not resumed under the new label.
func TestOtherLoadIsNotResumed(t *testing.T) {
	ctx := context.Background()
	traces := t.TempDir()
	withTraces := func(c *Config) { c.Traces = traces }
	before := newLab(t, withTraces) // no file: shipped and fitted shapes
	f, err := os.Create(filepath.Join(traces, generator.TraceFile(generator.SourceNASA)))
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	for i := range 7200 {
		_, err = fmt.Fprintf(zw, "%d ", 1+i%7)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	after := newLab(t, withTraces) // the NASA file is real now
	require.Equal(t, before.Config(), after.Config())
	require.NotEqual(t, before.Traces(), after.Traces())

	root := t.TempDir()
	p1, err := OpenPolicies(root, before)
	require.NoError(t, err)
	p2, err := OpenPolicies(root, after)
	require.NoError(t, err)
	assert.NotEqual(t, p1.Dir(), p2.Dir(), "policies of other load kept apart")

	dir := t.TempDir()
	plan := study.Plan{{Arm: "a", App: before.Split(generator.SplitTest)[0], Seed: 1}}
	run := func(l *Lab) error {
		_, err := Execute(ctx, Run{Lab: l, Dir: dir, Workers: 1}, "s", struct{}{}, 1, plan,
			func(context.Context, study.Cell) (int, error) { return 1, nil },
			func(string, []int) (study.Report, error) { return study.Report{Title: "s"}, nil })
		return err
	}
	require.NoError(t, run(before))
	require.NoError(t, run(before), "the same load resumes")
	assert.ErrorContains(t, run(after), "holds cells of another configuration")
}
