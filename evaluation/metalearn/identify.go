package metalearn

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// identification is acceptance point 2's measurement over n applications:
// for each, a reference and a query bundle of greedy episodes of an agent
// (with a zero embedding), embedded by a meta learner and by an untrained
// one, then identified by nearest neighbour. Eval runs it on the test
// split, Train's validation on held-out train-split applications after
// every round.
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

// result is the share of applications the meta learner identifies and
// which ones, and the untrained meta learner's.
func (id *identification) result() (accuracy float64, hits []bool, untrained float64, uHits []bool, err error) {
	if accuracy, hits, err = train.Identify(id.refs, id.queries); err != nil {
		return 0, nil, 0, nil, err
	}
	untrained, uHits, err = train.Identify(id.uRefs, id.uQueries)
	return accuracy, hits, untrained, uHits, err
}

// untrainedEmbedder is the meta learner at its initial weights drawn from
// seed, frozen: what an identification is held against.
func untrainedEmbedder(cfg meta.Config, seed uint64) (*meta.Embedder, error) {
	e, err := meta.NewEmbedder(cfg, rand.New(rand.NewPCG(seed, 0x0E1)))
	if err != nil {
		return nil, err
	}
	e.SetTraining(false)
	return e, nil
}

// validator is Train's validation: held-out train-split applications
// whose identification is measured after every round, as Eval measures it
// on the test split (reference and query bundles of greedy episodes at
// seed-drawn points of the day, with a zero embedding), with a copy of the
// meta learner's weights so that the training run is the same with or
// without it.
type validator struct {
	envs            []*gym.Embedded
	names           []string
	episodes        int
	seed            uint64
	copy, untrained *meta.Embedder
	zero            []float64
	mapping         gym.Mapping
}

func newValidator(l *lab.Lab, names []string, cfg meta.Config, c TrainConfig) (*validator, error) {
	v := &validator{episodes: c.HeldOutEpisodes, seed: c.Seed + 0x5A11D, zero: make([]float64, cfg.Embed), mapping: c.Lab.Mapping}
	for _, name := range names {
		e, err := l.Env(name, 0, sim.WithRandomStart())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		emb, err := gym.Embed(e, v.zero)
		if err != nil {
			return nil, err
		}
		v.envs, v.names = append(v.envs, emb), append(v.names, name)
	}
	var err error
	if v.copy, err = meta.NewEmbedder(cfg, rand.New(rand.NewPCG(v.seed, 1))); err != nil {
		return nil, err
	}
	if v.untrained, err = untrainedEmbedder(cfg, c.Seed); err != nil {
		return nil, err
	}
	v.copy.SetTraining(false)
	return v, nil
}

// identify returns the share of held-out applications identified with the
// weights of e and with the untrained meta learner.
func (v *validator) identify(ctx context.Context, ag agent.Agent, e *meta.Embedder) (trained, untrained float64, err error) {
	src := e.Params()
	for i, p := range v.copy.Params() {
		if err := p.CopyFrom(src[i]); err != nil {
			return 0, 0, err
		}
	}
	id := newIdentification(len(v.envs), ag, v.mapping, v.zero, v.episodes, v.seed, v.copy, v.untrained)
	for i, env := range v.envs {
		if err := id.play(ctx, i, env, env); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", v.names[i], err)
		}
	}
	trained, _, untrained, _, err = id.result()
	return trained, untrained, err
}
