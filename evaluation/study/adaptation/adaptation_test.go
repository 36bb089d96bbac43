package adaptation

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/metalearn"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/gym"
)

// tiny is a study small enough for a unit test.
func tiny() Config {
	return Config{Tests: 2, Apps: 2, Episodes: 6, Source: 4, Meta: lab.MetaRun{Apps: 3, Rounds: 1, M: 4, Seed: 1}, MetaSeeds: 1, Epsilon: 1, Ablations: 1, Identify: 3,
		Rule: train.ConvergenceRule{Window: 3, Tolerance: 0.05}, Plateau: train.ConvergenceRule{Window: 3, Tolerance: 0.02}, Seed: 1}
}

// zeroSeconds drops the one figure that is a measurement of the machine.
func zeroSeconds(rs []study.CellResult[Run]) {
	for i := range rs {
		rs[i].Result.Seconds = 0
	}
}

func readResults(t *testing.T, dir string) study.Results[Run] {
	t.Helper()
	var r study.Results[Run]
	require.NoError(t, readJSON(filepath.Join(dir, "results.json"), &r))
	zeroSeconds(r.Cells)
	return r
}

// TestShardsEqualUnsharded is the acceptance test: the study run as 4
// shards, merged, reports exactly what one unsharded run reports.
func TestShardsEqualUnsharded(t *testing.T) {
	if testing.Short() {
		t.Skip("trains agents")
	}
	ctx := context.Background()
	l := labtest.New(t)
	root := t.TempDir()
	run := func(dir, policies string, shard study.ShardSpec) error {
		p, err := lab.OpenPolicies(filepath.Join(root, policies), l)
		require.NoError(t, err)
		_, err = Execute(ctx, lab.Run{Lab: l, Policies: p, Dir: filepath.Join(root, dir), Shard: shard, Workers: 2, Bootstrap: study.DefaultBootstrap()}, tiny())
		return err
	}
	require.NoError(t, run("whole", "policies-whole", study.All))
	var shards []string
	for i := 1; i <= 4; i++ {
		// Each shard on its own "machine": its own policy folder.
		dir := filepath.Join(root, "shard", string(rune('0'+i)))
		err := run(filepath.Join("shard", string(rune('0'+i))), "policies-"+string(rune('0'+i)), study.ShardSpec{Index: i, Of: 4})
		require.ErrorIs(t, err, study.ErrShard)
		shards = append(shards, dir)
	}
	merged := filepath.Join(root, "merged")
	require.NoError(t, study.MergeDirs(merged, shards...))
	p, err := lab.OpenPolicies(filepath.Join(root, "policies-merged"), l)
	require.NoError(t, err)
	_, err = Execute(ctx, lab.Run{Lab: l, Policies: p, Dir: merged, Bootstrap: study.DefaultBootstrap(), RenderOnly: true}, tiny())
	require.NoError(t, err)

	whole, fromShards := readResults(t, filepath.Join(root, "whole")), readResults(t, merged)
	assert.Equal(t, whole.Cells, fromShards.Cells)
	assert.Len(t, whole.Cells, 1+2*2*len(Arms)+2*len(Ablations), "the meta run's identification; the first test's units run the ablations")
	a, err := os.ReadFile(filepath.Join(root, "whole", "report.md"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(merged, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(a), "rule-based")
	assert.Contains(t, string(a), "FLASH on 3 held-out test-split applications")
	assert.Equal(t, len(a) > 0, len(b) > 0)

	// A store of another configuration is refused, not mixed.
	other := tiny()
	other.Episodes++
	_, err = Execute(ctx, lab.Run{Lab: l, Policies: p, Dir: merged, Bootstrap: study.DefaultBootstrap(), RenderOnly: true}, other)
	require.ErrorContains(t, err, "holds cells of another configuration")
	assert.False(t, errors.Is(err, study.ErrShard))
}

// TestEveryArmAdaptsFromTheSameEpsilon: the meta-trained agent's ε
// decayed over meta-training and TL's source's over its training, yet
// every adapting cell, ablations included, starts at the study's ε; with
// MetaSeeds 2 the second test's cells start from the second meta run.
func TestEveryArmAdaptsFromTheSameEpsilon(t *testing.T) {
	if testing.Short() {
		t.Skip("trains agents")
	}
	ctx := context.Background()
	l := labtest.New(t)
	p := labtest.Policies(t, l)
	c := tiny()
	c.MetaSeeds = 2
	dir := t.TempDir()
	_, err := Execute(ctx, lab.Run{Lab: l, Policies: p, Dir: dir, Workers: 2, Bootstrap: study.DefaultBootstrap()}, c)
	require.NoError(t, err)
	for _, run := range []lab.MetaRun{c.Meta, c.Meta.WithoutEmbedding()} {
		mt, err := p.LoadMeta(run)
		require.NoError(t, err)
		assert.Less(t, mt.Agent.Epsilon(), c.Epsilon, "the %+v run's ε decayed", run)
	}
	second := c.Meta
	second.Seed = 2
	_, err = p.LoadMeta(second)
	require.NoError(t, err, "the second test's meta-training run")
	tests, err := DrawTests(c, l)
	require.NoError(t, err)
	_, src, err := p.Get(ctx, lab.Policy{App: tests[0].Source, Seed: c.Seed + 3, Episodes: c.Source})
	require.NoError(t, err)
	assert.Less(t, src.Epsilon(), c.Epsilon, "TL's source's ε decayed")

	res := readResults(t, dir)
	arms := map[string]bool{}
	for _, cell := range res.Cells {
		if cell.Cell.Arm == Rule || cell.Cell.Arm == Identification {
			continue
		}
		arms[cell.Cell.Arm] = true
		assert.Equal(t, c.Epsilon, cell.Result.Epsilon, cell.Cell.Key())
	}
	assert.Len(t, arms, len(methods)+len(Ablations))
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// ramp is a reward curve that climbs linearly from lo to hi over the first
// k episodes and then stays at hi.
func ramp(n, k int, lo, hi float64) Run {
	var r Run
	for i := range n {
		v := hi
		if i < k {
			v = lo + (hi-lo)*float64(i)/float64(k)
		}
		r.Rewards = append(r.Rewards, v)
		r.SLOViolations = append(r.SLOViolations, max(0, k-i))
		r.CPUUtil = append(r.CPUUtil, 0.5*v/hi)
		r.MemoryUtil = append(r.MemoryUtil, 0.4*v/hi)
	}
	r.Seconds = float64(n) / 10
	return r
}

// synthetic is a study whose figures are known: on every unit AWARE
// reaches 100 after 4 episodes, TL after 12, TL+ after 8, and the rule-based
// autoscaler earns 90 throughout; the first test's units run the
// ablations, which reach 100 after 10 (zero embedding), 12 (untrained),
// 8 (shuffled) and 6 episodes (multi-task).
func synthetic() (Config, study.Plan, []Test, []Run) {
	c := Config{Tests: 2, Apps: 2, Episodes: 20, Source: 5, Meta: lab.MetaRun{Apps: 2, Rounds: 1, M: 2, Seed: 1}, MetaSeeds: 2, Epsilon: 1, Ablations: 1,
		Rule: train.ConvergenceRule{Window: 3, Tolerance: 0.01}, Plateau: train.ConvergenceRule{Window: 3, Tolerance: 0.02}, Seed: 1}
	tests := []Test{{Index: 1, Source: "app-0001", Apps: []string{"app-0801", "app-0802"}, MetaSeed: 1}, {Index: 2, Source: "app-0002", Apps: []string{"app-0803", "app-0801"}, MetaSeed: 2}}
	plan := Plan(c, tests)
	runs := make([]Run, len(plan))
	reach := map[string]int{AWARE: 4, TL: 12, TLPlus: 8, ZeroEmbedding: 10, UntrainedEmbedding: 12, ShuffledEmbedding: 8, MultiTask: 6}
	for i, cell := range plan {
		if cell.Arm == Rule {
			runs[i] = ramp(c.Episodes, 0, 90, 90)
			continue
		}
		runs[i] = ramp(c.Episodes, reach[cell.Arm], 20, 100)
		runs[i].Epsilon = 1
	}
	return c, plan, tests, runs
}

// TestAblationsKnownAnswers: the ablation table's shares of AWARE's lead
// over TL are the synthetic study's (TL − arm) / (TL − AWARE) in episodes
// and (arm − TL) / (AWARE − TL) in reward, on the first test's units
// only; the plan runs them there and nowhere else.
func TestAblationsKnownAnswers(t *testing.T) {
	c, plan, tests, runs := synthetic()
	n := map[string]int{}
	for _, cell := range plan {
		n[cell.Arm]++
		if slices.Contains(Ablations, cell.Arm) {
			assert.Equal(t, 1, cell.Test, cell.Key())
		}
	}
	assert.Equal(t, map[string]int{AWARE: 4, TL: 4, TLPlus: 4, Rule: 4, ZeroEmbedding: 2, UntrainedEmbedding: 2, ShuffledEmbedding: 2, MultiTask: 2}, n)
	units, err := Units(c, plan, runs)
	require.NoError(t, err)
	tab, ok, err := ablationTable(c, tests, units, study.DefaultBootstrap())
	require.NoError(t, err)
	require.True(t, ok)
	// Episodes to converge are reach+3 (TestUnitsKnownAnswers): TL 15,
	// AWARE 7; mean rewards are the ramps' means.
	meanReward := func(k int) float64 { return mean(ramp(c.Episodes, k, 20, 100).Rewards) }
	wantEp := map[string]float64{ZeroEmbedding: 2.0 / 8, UntrainedEmbedding: 0, ShuffledEmbedding: 4.0 / 8, MultiTask: 6.0 / 8}
	rows := map[string][]string{}
	for _, r := range tab.Rows {
		rows[r[0]] = r
	}
	require.Len(t, rows, 6, "AWARE, the four ablations and TL")
	for arm, want := range wantEp {
		reach := map[string]int{ZeroEmbedding: 10, UntrainedEmbedding: 12, ShuffledEmbedding: 8, MultiTask: 6}[arm]
		wantR := (meanReward(reach) - meanReward(12)) / (meanReward(4) - meanReward(12))
		saved := float64(15 - (reach + 3))
		assert.Equal(t, study.Estimate{Value: saved, Lo: saved, Hi: saved, N: 2, Level: 0.95}.String(), rows[arm][5], arm)
		assert.Equal(t, study.Estimate{Value: want, Lo: want, Hi: want, N: 2, Level: 0.95}.String(), rows[arm][7], arm)
		assert.Equal(t, study.Estimate{Value: wantR, Lo: wantR, Hi: wantR, N: 2, Level: 0.95}.String(), rows[arm][8], arm)
	}
	assert.Equal(t, "8 [8, 8]", rows[AWARE][5], "AWARE converges 8 episodes before TL")
	assert.Equal(t, "1 (by definition)", rows[AWARE][7])
	assert.Equal(t, "0 of 2", rows[MultiTask][4])

	// Where AWARE has no lead over TL, no share of it is given.
	for i, cell := range plan {
		if cell.Arm == TL {
			runs[i] = ramp(c.Episodes, 4, 20, 100)
			runs[i].Epsilon = 1
		}
	}
	units, err = Units(c, plan, runs)
	require.NoError(t, err)
	tab, _, err = ablationTable(c, tests, units, study.DefaultBootstrap())
	require.NoError(t, err)
	for _, r := range tab.Rows {
		if slices.Contains(Ablations, r[0]) {
			assert.Equal(t, "– (AWARE's lead not established)", r[7], r[0])
		}
	}

	// Without ablated units there is no table.
	c.Ablations = 0
	plan = Plan(c, tests)
	_, ok, err = ablationTable(c, tests, must(Units(c, plan, runsFor(c, plan))), study.DefaultBootstrap())
	require.NoError(t, err)
	assert.False(t, ok)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// runsFor is synthetic's runs for another plan of its tests.
func runsFor(c Config, plan study.Plan) []Run {
	_, full, _, runs := synthetic()
	byKey := map[string]Run{}
	for i, cell := range full {
		byKey[cell.Key()] = runs[i]
	}
	out := make([]Run, len(plan))
	for i, cell := range plan {
		out[i] = byKey[cell.Key()]
	}
	return out
}

// TestFlashPart: the identification cells' evaluations become the FLASH
// table, a plain statement of whether the similarity predicted the reward
// lost, and the headline of applications identified against an untrained
// meta learner.
func TestFlashPart(t *testing.T) {
	c, plan, _, runs := synthetic()
	ev := func(rho, lo, hi float64) *metalearn.Evaluation {
		return &metalearn.Evaluation{Rounds: 4, Apps: []string{"app-0801", "app-0802"}, Hits: []bool{true, true}, UntrainedHits: []bool{true, false},
			Accuracy: 1, UntrainedAcc: 0.5, Pairs: 2, Rho: rho, RhoLo: lo, RhoHi: hi}
	}
	plan = append(study.Plan{identificationCell(c, 1), identificationCell(c, 2)}, plan...)
	for _, tc := range []struct {
		a, b *metalearn.Evaluation
		want string
	}{
		{ev(-0.5, -0.7, -0.2), ev(-0.4, -0.6, -0.1), "in every one of the 2 meta-training runs the similarity"},
		{ev(-0.02, -0.06, 0.02), ev(0.1, -0.1, 0.3), "in none of the 2 meta-training runs does the similarity"},
		{ev(-0.5, -0.7, -0.2), ev(0.4, 0.1, 0.6), "in 1 of the 2 meta-training runs (seeds 1), and the opposite in 1 (seeds 2)"},
	} {
		rs := append([]Run{{Identification: tc.a}, {Identification: tc.b}}, runs...)
		tab, para, h, ok, err := flashPart(c, plan, rs, study.DefaultBootstrap())
		require.NoError(t, err)
		require.True(t, ok)
		assert.Contains(t, para, tc.want)
		require.Len(t, tab.Rows, 2)
		assert.Equal(t, "100 %", tab.Rows[0][2])
		assert.InDelta(t, 2, h.Ours.Value, 1e-12, "4 of 4 identified against 2 of 4")
	}
	// Units and the exploration note pass over the identification cells.
	rs := append([]Run{{Identification: ev(0, -1, 1)}, {Identification: ev(0, -1, 1)}}, runs...)
	units, err := Units(c, plan, rs)
	require.NoError(t, err)
	assert.Len(t, units, 4)
	assert.NotContains(t, explorationNote(c, plan, rs), "Not so")
	_, _, _, ok, err := flashPart(c, plan[2:], runs, study.DefaultBootstrap())
	require.NoError(t, err)
	assert.False(t, ok, "no identification cells")
}

// TestExplorationNote: the report says when a cell adapted from another ε
// than the study's, naming the arm.
func TestExplorationNote(t *testing.T) {
	c, plan, _, runs := synthetic()
	assert.NotContains(t, explorationNote(c, plan, runs), "Not so")
	for i, cell := range plan {
		if cell.Arm == AWARE && cell.Test == 2 {
			runs[i].Epsilon = 0.2
		}
	}
	assert.Contains(t, explorationNote(c, plan, runs), "Not so in these cells: AWARE from 0.2.")
}

func TestUnitsKnownAnswers(t *testing.T) {
	c, plan, _, runs := synthetic()
	units, err := Units(c, plan, runs)
	require.NoError(t, err)
	require.Len(t, units, 4)
	for _, u := range units {
		assert.InDelta(t, 100, u.Reference, 1e-9)
		// The trailing 3-episode mean first reaches 99 (within 1 % of
		// 100) at the window ending 2 episodes after the ramp's top: a
		// ramp of k reaches its top at episode k+1.
		assert.Equal(t, 4+3, u.Arms[AWARE].Episodes)
		assert.Equal(t, 12+3, u.Arms[TL].Episodes)
		assert.Equal(t, 8+3, u.Arms[TLPlus].Episodes)
		assert.False(t, u.Arms[TL].Censored)
		// Its own plateau: both windows of 3 at the ramp's top, the
		// first 5 episodes after it.
		assert.Equal(t, 4+6, u.Arms[AWARE].Plateau)
		assert.Equal(t, 12+6, u.Arms[TL].Plateau)
		assert.False(t, u.Arms[TL].PlateauCensored)
		assert.Zero(t, u.Arms[TL].ToR, "no converged reference in this study")
		assert.InDelta(t, 0.5, u.RefCPU, 1e-12, "the best method's final window")
		assert.InDelta(t, 0, u.Arms[Rule].CPUDef, 1e-12, "rule-based's constant 90 of 90 is 0.5 CPU")
		assert.InDelta(t, 2, u.Arms[TL].Seconds, 1e-12)
	}
	// With a converged reference of 90, reaching it (within 1 %: a
	// trailing mean of 89.1) takes AWARE's ramp 6 episodes, TL's 13.
	for i := range runs {
		runs[i].Converged = &train.Score{Reward: 90}
	}
	units, err = Units(c, plan, runs)
	require.NoError(t, err)
	assert.Equal(t, 6, units[0].Arms[AWARE].ToR)
	assert.Equal(t, 13, units[0].Arms[TL].ToR)
	assert.False(t, units[0].Arms[TL].ToRCensored)
	// A cell shorter than the window is refused with its name.
	runs[0].Rewards = runs[0].Rewards[:2]
	_, err = Units(c, plan, runs)
	assert.ErrorContains(t, err, "cell t001_AWARE_app-0801_s1 holds 2 episodes")
}

func TestRenderGolden(t *testing.T) {
	c, plan, tests, runs := synthetic()
	dir := t.TempDir()
	rep, err := Render(c, plan, tests, runs, []string{"nasa: synthetic"}, study.DefaultBootstrap(), dir)
	require.NoError(t, err)
	// TL needs (12+3)/(4+3) the episodes on every unit: the interval is the point.
	h := rep.Headlines[0]
	assert.InDelta(t, 15.0/7, h.Ours.Value, 1e-12)
	assert.InDelta(t, 15.0/7, h.Ours.Lo, 1e-12)
	assert.Equal(t, "same direction, smaller", h.Verdict(), "15/7 against the paper's 5.5")
	for _, f := range rep.Figures {
		assert.FileExists(t, filepath.Join(dir, f.File))
	}
	var b strings.Builder
	require.NoError(t, rep.Markdown(&b))
	labtest.Golden(t, "report.golden.md", b.String())
}

// TestFromMetaTrainFolder: AWARE started from a folder of `aware meta
// train` (here the study's own meta run's folder, which train.MetaTrain
// wrote as that command does) adapts exactly as from the study's own run;
// a folder of another action mapping, or none, is refused before any cell
// runs.
func TestFromMetaTrainFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("trains agents")
	}
	ctx := context.Background()
	l := labtest.New(t)
	root := t.TempDir()
	p, err := lab.OpenPolicies(filepath.Join(root, "policies"), l)
	require.NoError(t, err)
	run := func(dir string, c Config) (study.Report, error) {
		return Execute(ctx, lab.Run{Lab: l, Policies: p, Dir: filepath.Join(root, dir), Workers: 2, Bootstrap: study.DefaultBootstrap()}, c)
	}
	_, err = run("own", tiny())
	require.NoError(t, err)
	mt, err := p.LoadMeta(tiny().Meta)
	require.NoError(t, err)
	from := tiny()
	from.From = mt.Dir
	rep, err := run("from", from)
	require.NoError(t, err)
	assert.Contains(t, rep.Paragraphs[0], "AWARE starts from the `aware meta train` run in "+mt.Dir+" (bundles of 4)")
	own, fromDir := readResults(t, filepath.Join(root, "own")), readResults(t, filepath.Join(root, "from"))
	// The multi-task agent trains over the study's own meta-training
	// applications: with a run from elsewhere it is left out.
	ownCells := map[string]Run{}
	for _, c := range own.Cells {
		ownCells[c.Cell.Key()] = c.Result
	}
	require.Len(t, fromDir.Cells, len(own.Cells)-tiny().Apps)
	for _, c := range fromDir.Cells {
		assert.NotEqual(t, MultiTask, c.Cell.Arm)
		assert.Equal(t, ownCells[c.Cell.Key()], c.Result, c.Cell.Key())
	}
	assert.Less(t, from.Cost(nil), tiny().Cost(nil), "no meta-training to pay for")

	for _, tc := range []struct {
		lab  func(*lab.Config)
		from string
		want string
	}{
		{func(c *lab.Config) {}, filepath.Join(root, "none"), "no meta.ckpt"},
		{func(c *lab.Config) { c.Mapping = gym.Absolute }, mt.Dir, "acted through relative actions, this lab through absolute"},
	} {
		l := labtest.New(t, tc.lab)
		c := tiny()
		c.From = tc.from
		_, err := Execute(ctx, lab.Run{Lab: l, Policies: labtest.Policies(t, l), Dir: t.TempDir(), Bootstrap: study.DefaultBootstrap()}, c)
		assert.ErrorContains(t, err, tc.want)
	}
}
