package adaptation

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/gym"
)

// tiny is a study small enough for a unit test.
func tiny() Config {
	return Config{Tests: 2, Apps: 2, Episodes: 6, Source: 4, Meta: lab.MetaRun{Apps: 3, Rounds: 1, M: 4, Seed: 1},
		Rule: train.ConvergenceRule{Window: 3, Tolerance: 0.05}, Seed: 1}
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
	assert.Len(t, whole.Cells, 2*2*len(Arms))
	a, err := os.ReadFile(filepath.Join(root, "whole", "report.md"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(merged, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(a), "rule-based")
	assert.Equal(t, len(a) > 0, len(b) > 0)

	// A store of another configuration is refused, not mixed.
	other := tiny()
	other.Episodes++
	_, err = Execute(ctx, lab.Run{Lab: l, Policies: p, Dir: merged, Bootstrap: study.DefaultBootstrap(), RenderOnly: true}, other)
	require.ErrorContains(t, err, "holds cells of another configuration")
	assert.False(t, errors.Is(err, study.ErrShard))
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
// autoscaler earns 90 throughout.
func synthetic() (Config, study.Plan, []Test, []Run) {
	c := Config{Tests: 2, Apps: 2, Episodes: 20, Source: 5, Meta: lab.MetaRun{Apps: 2, Rounds: 1, M: 2, Seed: 1}, Rule: train.ConvergenceRule{Window: 3, Tolerance: 0.01}, Seed: 1}
	tests := []Test{{Index: 1, Source: "app-0001", Apps: []string{"app-0801", "app-0802"}}, {Index: 2, Source: "app-0002", Apps: []string{"app-0803", "app-0801"}}}
	plan := Plan(c, tests)
	runs := make([]Run, len(plan))
	for i, cell := range plan {
		switch cell.Arm {
		case AWARE:
			runs[i] = ramp(c.Episodes, 4, 20, 100)
		case TL:
			runs[i] = ramp(c.Episodes, 12, 20, 100)
		case TLPlus:
			runs[i] = ramp(c.Episodes, 8, 20, 100)
		case Rule:
			runs[i] = ramp(c.Episodes, 0, 90, 90)
		}
	}
	return c, plan, tests, runs
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
		assert.InDelta(t, 0.5, u.RefCPU, 1e-12, "the best method's final window")
		assert.InDelta(t, 0, u.Arms[Rule].CPUDef, 1e-12, "rule-based's constant 90 of 90 is 0.5 CPU")
		assert.InDelta(t, 2, u.Arms[TL].Seconds, 1e-12)
	}
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
	require.Len(t, fromDir.Cells, len(own.Cells))
	for i := range own.Cells {
		assert.Equal(t, own.Cells[i].Result, fromDir.Cells[i].Result, own.Cells[i].Cell.Key())
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
