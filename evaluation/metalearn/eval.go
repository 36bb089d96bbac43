package metalearn

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/evaluation/progress"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Where in the day the bundles' episodes of an evaluation run
// (EvalConfig.Windows).
const (
	// WindowsRandom starts every episode at a point of the day drawn from
	// its seed, reference and query seeds apart, as meta-training draws
	// them.
	WindowsRandom = "random"
	// WindowsShift replays the application's first window for the
	// reference episodes and a window EvalConfig.Shift later for the
	// query's.
	WindowsShift = "shift"
)

// EvalConfig is an evaluation of a meta-training run on held-out
// applications (`aware meta eval`).
type EvalConfig struct {
	// Lab is the world: the pool, the traces (synthetic shapes from
	// ShapeSeed where absent) and the step.
	Lab lab.Config
	// From is the folder of the Train run; the report is written there.
	From string
	// Apps are the first test-split applications of the pool; Episodes
	// the greedy episodes per bundle; M the trajectories per bundle the
	// run was trained with.
	Apps, Episodes, M int
	// Seed seeds the episodes and the untrained meta learner.
	Seed uint64
	// Windows is WindowsRandom or WindowsShift (with Shift).
	Windows string
	Shift   time.Duration
	// Bar, when set, draws the progress of the embedding and of the
	// pairs.
	Bar progress.Bar
}

// Validate refuses an evaluation that cannot run.
func (c EvalConfig) Validate() error {
	if c.Apps < 2 || c.Episodes < 1 || c.Lab.Step <= 0 || c.Shift < 0 {
		return fmt.Errorf("--apps %d (at least 2), --episodes %d, --step %s and --shift %s must be positive", c.Apps, c.Episodes, c.Lab.Step, c.Shift)
	}
	if c.Windows != WindowsRandom && c.Windows != WindowsShift {
		return fmt.Errorf("--windows %q: want %s or %s", c.Windows, WindowsRandom, WindowsShift)
	}
	return nil
}

// Evaluation is eval.json.
type Evaluation struct {
	Checkpoint   string   `json:"checkpoint"`
	Rounds       int      `json:"rounds"`
	Apps         []string `json:"apps"`
	Episodes     int      `json:"episodesPerBundle"`
	Windows      string   `json:"windows"`
	ShiftSteps   int      `json:"shiftSteps"`
	Accuracy     float64  `json:"accuracy"`
	UntrainedAcc float64  `json:"untrainedAccuracy"`
	Hits         []bool   `json:"hits"`
	// UntrainedHits are the applications the untrained meta learner
	// identifies.
	UntrainedHits []bool    `json:"untrainedHits,omitempty"`
	Pairs         int       `json:"pairs"`
	Similarity    []float64 `json:"similarity"`
	RewardDrop    []float64 `json:"rewardDrop"`
	Rho           float64   `json:"spearman"`
	RhoLo         float64   `json:"spearmanLow"`
	RhoHi         float64   `json:"spearmanHigh"`
	// RhoError is why ρ could not be computed ("" when it was).
	RhoError string `json:"spearmanError,omitempty"`
}

// Eval measures what the meta learner of c.From tells apart on c.Apps
// test-split applications (identification by nearest neighbour, beside an
// untrained meta learner) and how the similarity of two applications'
// embeddings relates to the reward the agent loses running one with the
// other's (Spearman's ρ over ordered pairs). It prints the report to out,
// and writes eval.md and eval.json into c.From.
func Eval(ctx context.Context, c EvalConfig, out io.Writer) (Evaluation, error) {
	if err := c.Validate(); err != nil {
		return Evaluation{}, err
	}
	l, err := lab.New(c.Lab)
	if err != nil {
		return Evaluation{}, err
	}
	res, err := Evaluate(ctx, l, c)
	if err != nil {
		return Evaluation{}, err
	}
	md := evalMarkdown(res, c)
	fmt.Fprint(out, md)
	return res, writeReport(c.From, "eval.md", md, "eval.json", res)
}

// Evaluate is Eval's measurement in the world l (c.Lab is l's
// configuration), writing nothing. A correlation that cannot be computed
// (too few distinct pairs) is Evaluation.RhoError and leaves the rest
// standing.
func Evaluate(ctx context.Context, l *lab.Lab, c EvalConfig) (Evaluation, error) {
	c.Lab = l.Config()
	if err := c.Validate(); err != nil {
		return Evaluation{}, err
	}
	cfg := meta.DefaultConfig(gym.StateDim + gym.ActDim + 1)
	ag, f, err := lab.NewMetaLearners(cfg, c.M, c.Seed, PaperMetaLR)
	if err != nil {
		return Evaluation{}, err
	}
	rounds, mapping, err := train.LoadMetaTrain(c.From, ag, f)
	if err != nil {
		return Evaluation{}, err
	}
	f.SetMetaUpdates(false)
	untrained, err := untrainedEmbedder(cfg, c.Seed)
	if err != nil {
		return Evaluation{}, err
	}
	names := l.Split(generator.SplitTest)
	if len(names) < c.Apps {
		return Evaluation{}, fmt.Errorf("metalearn: apps %d: the pool of %d (seed %d) has %d %s-split applications", c.Apps, c.Lab.PoolSize, c.Lab.PoolSeed, len(names), generator.SplitTest)
	}
	names = names[:c.Apps]
	shift := int(c.Shift / c.Lab.Step)
	opts := []sim.Option{sim.WithStep(c.Lab.Step)}
	if c.Windows == WindowsRandom {
		shift = 0
		opts = append(opts, sim.WithRandomStart())
	}
	zero := make([]float64, cfg.Embed)
	env := func(name string, offset int) (*gym.Embedded, error) {
		_, a, err := l.App(name)
		if err != nil {
			return nil, err
		}
		a.Load.Offset += offset
		e, err := sim.NewEnv(l.Profile(), a, opts...)
		if err != nil {
			return nil, err
		}
		return gym.Embed(e, zero)
	}
	n := len(names)
	id := newIdentification(n, ag, mapping, zero, c.Episodes, c.Seed, f.Embedder(), untrained)
	envs := make([]*gym.Embedded, n)
	set, end := c.Bar.Start("embedding", n)
	for i, name := range names {
		if envs[i], err = env(name, 0); err != nil {
			return Evaluation{}, fmt.Errorf("%s: %w", name, err)
		}
		later, err := env(name, shift)
		if err != nil {
			return Evaluation{}, fmt.Errorf("%s: %w", name, err)
		}
		if err := id.play(ctx, i, envs[i], later); err != nil {
			return Evaluation{}, fmt.Errorf("%s: %w", name, err)
		}
		set(i + 1)
	}
	end()
	res := Evaluation{Checkpoint: filepath.Join(c.From, train.MetaCheckpoint), Rounds: rounds, Apps: names, Episodes: c.Episodes, Windows: c.Windows, ShiftSteps: shift}
	if res.Accuracy, res.Hits, res.UntrainedAcc, res.UntrainedHits, err = id.result(); err != nil {
		return Evaluation{}, err
	}
	refs := id.refs

	// Reward drop of running j with i's embedding, against their similarity.
	reward := func(j int, e []float64) (float64, error) {
		_, eps, err := train.Trajectories(ctx, envs[j], ag, mapping, e, 1, c.Seed+2000, 100)
		if err != nil {
			return 0, err
		}
		return eps[0].Reward, nil
	}
	own := make([]float64, n)
	set, end = c.Bar.Start("pairs", n)
	for j := range n {
		if own[j], err = reward(j, refs[j]); err != nil {
			return Evaluation{}, err
		}
		for i := range n {
			if i == j {
				continue
			}
			r, err := reward(j, refs[i])
			if err != nil {
				return Evaluation{}, err
			}
			res.Similarity = append(res.Similarity, meta.Similarity(refs[i], refs[j]))
			res.RewardDrop = append(res.RewardDrop, own[j]-r)
		}
		set(j + 1)
	}
	end()
	res.Pairs = len(res.Similarity)
	var rhoErr error
	res.Rho, res.RhoLo, res.RhoHi, rhoErr = train.SpearmanCI(res.Similarity, res.RewardDrop, 0.95, 1000, c.Seed)
	if rhoErr != nil {
		res.RhoError = rhoErr.Error()
	}
	if math.IsNaN(res.RhoLo) || math.IsNaN(res.RhoHi) { // too few distinct pairs to resample
		res.RhoLo, res.RhoHi = -1, 1
	}
	return res, nil
}

// evalMarkdown is eval.md.
func evalMarkdown(res Evaluation, c EvalConfig) string {
	var md strings.Builder
	where := fmt.Sprintf("query window %s (%d steps) after the reference", c.Shift, res.ShiftSteps)
	if c.Windows == WindowsRandom {
		where = "every episode at a point of the day drawn from its seed, reference and query seeds apart"
	}
	fmt.Fprintf(&md, "Meta learner of %s (%d rounds) on %d test-split applications, bundles of %d greedy episodes, %s:\n\n",
		res.Checkpoint, res.Rounds, len(res.Apps), c.Episodes, where)
	hits := 0
	for _, h := range res.Hits {
		if h {
			hits++
		}
	}
	fmt.Fprintf(&md, "- identification by nearest neighbour: **%.0f %%** (%d of %d); untrained meta learner: %.0f %%\n",
		100*res.Accuracy, hits, len(res.Apps), 100*res.UntrainedAcc)
	if res.RhoError != "" {
		fmt.Fprintf(&md, "- similarity against reward drop over %d pairs: %s\n", res.Pairs, res.RhoError)
	} else {
		fmt.Fprintf(&md, "- similarity against reward drop over %d ordered pairs: Spearman ρ = %.3f (95 %% bootstrap interval %.3f to %.3f; negative: more similar, less lost)\n",
			res.Pairs, res.Rho, res.RhoLo, res.RhoHi)
	}
	return md.String()
}
