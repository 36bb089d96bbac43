package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// metaEvalFlags are the flags of `aware meta eval`.
type metaEvalFlags struct {
	poolFlags
	from           string
	apps, episodes int
	m              int
	seed           uint64
	shift          time.Duration
	windows        string
}

func newMetaEvalCmd() *cobra.Command {
	fl := metaEvalFlags{apps: 50, episodes: 20, m: 20, shift: 12 * time.Hour, windows: windowsRandom}
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure what a meta-trained embedding tells apart on held-out applications",
		Long: `Loads a run of aware meta train (--from) and, on the first --apps applications of the
pool's test split (never trained on), measures:

  identification: each application runs --episodes greedy episodes of the trained agent, the
  reference bundle, and as many again, the query bundle; a query is identified when its most
  similar reference (FLASH similarity) is its own application's. With --windows random (the
  default) every episode starts at a point of the day drawn from its seed (reference and
  query seeds differ), as meta-training draws them; with --windows shift the reference
  episodes all replay the application's first window and the query's a window --shift later.
  The same with the meta learner at its untrained initial weights is printed beside it.

  similarity against reward drop: for every ordered pair (i, j) the agent runs application j
  with application i's embedding instead of its own; the reward it loses is held against the
  similarity of the two embeddings (Spearman's rank correlation, 95 % bootstrap interval
  over pairs; pairs share applications, so the interval is narrower than an independent
  sample's).

Writes eval.md and eval.json beside the checkpoint.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMetaEval(cmd.Context(), cmd.OutOrStdout(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.from, "from", "out/meta", "folder of an aware meta train run")
	f.IntVar(&fl.apps, "apps", fl.apps, "test-split applications to evaluate on")
	f.IntVar(&fl.episodes, "episodes", fl.episodes, "episodes per bundle (the paper's M = 20)")
	f.IntVar(&fl.m, "m", fl.m, "trajectories per bundle the run was trained with")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the episodes (and of the untrained meta learner)")
	f.DurationVar(&fl.shift, "shift", fl.shift, "with --windows shift: how much later in the trace the query window starts")
	f.StringVar(&fl.windows, "windows", fl.windows, "where in the day the bundles' episodes run: random (each from its seed) or shift (two fixed windows)")
	fl.poolFlags.register(f)
	return cmd
}

// The --windows choices of aware meta eval.
const (
	windowsRandom = "random"
	windowsShift  = "shift"
)

// metaEval is eval.json.
type metaEval struct {
	Checkpoint   string    `json:"checkpoint"`
	Rounds       int       `json:"rounds"`
	Apps         []string  `json:"apps"`
	Episodes     int       `json:"episodesPerBundle"`
	Windows      string    `json:"windows"`
	ShiftSteps   int       `json:"shiftSteps"`
	Accuracy     float64   `json:"accuracy"`
	UntrainedAcc float64   `json:"untrainedAccuracy"`
	Hits         []bool    `json:"hits"`
	Pairs        int       `json:"pairs"`
	Similarity   []float64 `json:"similarity"`
	RewardDrop   []float64 `json:"rewardDrop"`
	Rho          float64   `json:"spearman"`
	RhoLo        float64   `json:"spearmanLow"`
	RhoHi        float64   `json:"spearmanHigh"`
}

func runMetaEval(ctx context.Context, out io.Writer, fl metaEvalFlags) error {
	if fl.apps < 2 || fl.episodes < 1 || fl.step <= 0 || fl.shift < 0 {
		return fmt.Errorf("--apps %d (at least 2), --episodes %d, --step %s and --shift %s must be positive", fl.apps, fl.episodes, fl.step, fl.shift)
	}
	if fl.windows != windowsRandom && fl.windows != windowsShift {
		return fmt.Errorf("--windows %q: want %s or %s", fl.windows, windowsRandom, windowsShift)
	}
	cfg := meta.DefaultConfig(gym.StateDim + gym.ActDim + 1)
	ag, f, err := lab.NewMetaLearners(cfg, fl.m, fl.seed, paperMetaLR)
	if err != nil {
		return err
	}
	rounds, mapping, err := train.LoadMetaTrain(fl.from, ag, f)
	if err != nil {
		return err
	}
	f.SetMetaUpdates(false)
	trained := f.Embedder()
	untrained, err := meta.NewEmbedder(cfg, rand.New(rand.NewPCG(fl.seed, 0x0E1)))
	if err != nil {
		return err
	}
	untrained.SetTraining(false)

	prof, apps, simApps, err := splitApps(generator.SplitTest, fl.apps, fl.poolSize, fl.poolSeed, fl.traces, fl.step, fl.seed)
	if err != nil {
		return err
	}
	shift := int(fl.shift / fl.step)
	opts := []sim.Option{sim.WithStep(fl.step)}
	if fl.windows == windowsRandom {
		shift = 0
		opts = append(opts, sim.WithRandomStart())
	}
	zero := make([]float64, cfg.Embed)
	env := func(a sim.App, offset int) (*gym.Embedded, error) {
		a.Load.Offset += offset
		e, err := sim.NewEnv(prof, a, opts...)
		if err != nil {
			return nil, err
		}
		return gym.Embed(e, zero)
	}
	n := len(apps)
	id := newIdentification(n, ag, mapping, zero, fl.episodes, fl.seed, trained, untrained)
	envs := make([]*gym.Embedded, n)
	b := newBar(os.Stderr, "embedding", n)
	for i, a := range simApps {
		if envs[i], err = env(a, 0); err != nil {
			return fmt.Errorf("%s: %w", apps[i].Name(), err)
		}
		later, err := env(a, shift)
		if err != nil {
			return fmt.Errorf("%s: %w", apps[i].Name(), err)
		}
		if err := id.play(ctx, i, envs[i], later); err != nil {
			return fmt.Errorf("%s: %w", apps[i].Name(), err)
		}
		b.set(i + 1)
	}
	b.done()
	res := metaEval{Checkpoint: filepath.Join(fl.from, train.MetaCheckpoint), Rounds: rounds, Episodes: fl.episodes, Windows: fl.windows, ShiftSteps: shift}
	for _, a := range apps {
		res.Apps = append(res.Apps, a.Name())
	}
	if res.Accuracy, res.Hits, res.UntrainedAcc, err = id.result(); err != nil {
		return err
	}
	refs := id.refs

	// Reward drop of running j with i's embedding, against their similarity.
	reward := func(j int, e []float64) (float64, error) {
		_, eps, err := train.Trajectories(ctx, envs[j], ag, mapping, e, 1, fl.seed+2000, 100)
		if err != nil {
			return 0, err
		}
		return eps[0].Reward, nil
	}
	own := make([]float64, n)
	b = newBar(os.Stderr, "pairs", n)
	for j := range n {
		if own[j], err = reward(j, refs[j]); err != nil {
			return err
		}
		for i := range n {
			if i == j {
				continue
			}
			r, err := reward(j, refs[i])
			if err != nil {
				return err
			}
			res.Similarity = append(res.Similarity, meta.Similarity(refs[i], refs[j]))
			res.RewardDrop = append(res.RewardDrop, own[j]-r)
		}
		b.set(j + 1)
	}
	b.done()
	res.Pairs = len(res.Similarity)
	rhoErr := error(nil)
	res.Rho, res.RhoLo, res.RhoHi, rhoErr = train.SpearmanCI(res.Similarity, res.RewardDrop, 0.95, 1000, fl.seed)
	if math.IsNaN(res.RhoLo) || math.IsNaN(res.RhoHi) { // too few distinct pairs to resample
		res.RhoLo, res.RhoHi = -1, 1
	}

	var md strings.Builder
	where := fmt.Sprintf("query window %s (%d steps) after the reference", fl.shift, shift)
	if fl.windows == windowsRandom {
		where = "every episode at a point of the day drawn from its seed, reference and query seeds apart"
	}
	fmt.Fprintf(&md, "Meta learner of %s (%d rounds) on %d test-split applications, bundles of %d greedy episodes, %s:\n\n",
		res.Checkpoint, rounds, n, fl.episodes, where)
	fmt.Fprintf(&md, "- identification by nearest neighbour: **%.0f %%** (%d of %d); untrained meta learner: %.0f %%\n",
		100*res.Accuracy, count(res.Hits), n, 100*res.UntrainedAcc)
	if rhoErr != nil {
		fmt.Fprintf(&md, "- similarity against reward drop over %d pairs: %v\n", res.Pairs, rhoErr)
	} else {
		fmt.Fprintf(&md, "- similarity against reward drop over %d ordered pairs: Spearman ρ = %.3f (95 %% bootstrap interval %.3f to %.3f; negative: more similar, less lost)\n",
			res.Pairs, res.Rho, res.RhoLo, res.RhoHi)
	}
	fmt.Fprint(out, md.String())
	return writeReport(fl.from, "eval.md", md.String(), "eval.json", res)
}

// identification is acceptance point 2's measurement over n applications:
// for each, a reference and a query bundle of greedy episodes of an agent
// (with a zero embedding), embedded by a meta learner and by an untrained
// one, then identified by nearest neighbour. `aware meta eval` runs it on
// the test split, `aware meta train --validate` on held-out train-split
// applications after every round.
type identification struct {
	ag                 agent.Agent
	mapping            gym.Mapping
	zero               []float64
	episodes           int
	seed               uint64
	trained, untrained *meta.Embedder

	refs, queries, uRefs, uQueries [][]float64
}

func newIdentification(n int, ag agent.Agent, mapping gym.Mapping, zero []float64, episodes int, seed uint64, trained, untrained *meta.Embedder) *identification {
	return &identification{ag: ag, mapping: mapping, zero: zero, episodes: episodes, seed: seed, trained: trained, untrained: untrained,
		refs: make([][]float64, n), queries: make([][]float64, n), uRefs: make([][]float64, n), uQueries: make([][]float64, n)}
}

// play runs application i's reference bundle on ref (episodes from the
// seed) and its query bundle on query (from seed + 1000), and embeds both.
func (id *identification) play(ctx context.Context, i int, ref, query *gym.Embedded) error {
	ta, _, err := train.Trajectories(ctx, ref, id.ag, id.mapping, id.zero, id.episodes, id.seed, 100)
	if err != nil {
		return err
	}
	tb, _, err := train.Trajectories(ctx, query, id.ag, id.mapping, id.zero, id.episodes, id.seed+1000, 100)
	if err != nil {
		return err
	}
	id.refs[i], id.queries[i] = train.EmbedTrajectories(id.trained, ta, 100), train.EmbedTrajectories(id.trained, tb, 100)
	id.uRefs[i], id.uQueries[i] = train.EmbedTrajectories(id.untrained, ta, 100), train.EmbedTrajectories(id.untrained, tb, 100)
	return nil
}

// result is the share of applications the meta learner identifies, which
// ones, and the untrained meta learner's share.
func (id *identification) result() (accuracy float64, hits []bool, untrained float64, err error) {
	if accuracy, hits, err = train.Identify(id.refs, id.queries); err != nil {
		return 0, nil, 0, err
	}
	untrained, _, err = train.Identify(id.uRefs, id.uQueries)
	return accuracy, hits, untrained, err
}

func count(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}
