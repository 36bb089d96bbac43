package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/gym"
)

// Trajectories runs episodes of env under ag's greedy policy (no
// exploration, no updates) with embedding emb set on env, and returns them
// as the meta learner sees trajectories: each step's state without the
// embedding, the agent's normalised action and the reward. The agent acts
// through mapping. Episode i is reset with seed+i.
func Trajectories(ctx context.Context, env *gym.Embedded, ag agent.Agent, mapping gym.Mapping, emb []float64, episodes int, seed uint64, maxSteps int) ([]meta.Trajectory, []Episode, error) {
	if err := env.SetEmbedding(emb); err != nil {
		return nil, nil, err
	}
	space := env.ActionSpace()
	if space.Dim() != gym.ActDim {
		return nil, nil, fmt.Errorf("train: action space has %d dimensions, want %d", space.Dim(), gym.ActDim)
	}
	p := &recordPolicy{agentPolicy: agentPolicy{ag: ag, bounds: gym.BoundsOf(space), mapping: mapping, act: make([]float64, gym.ActDim)}, embDim: len(emb)}
	var trajs []meta.Trajectory
	var eps []Episode
	for i := range episodes {
		p.el, p.steps, p.reward = p.el[:0], 0, 0
		e, err := loop(ctx, env, p, Config{Episodes: 1, Seed: seed + uint64(i), MaxSteps: maxSteps})
		if err != nil {
			return nil, nil, err
		}
		trajs = append(trajs, meta.Trajectory{Elements: slices.Clone(p.el), Steps: p.steps, Reward: p.reward, Episode: i})
		e[0].Index = i
		eps = append(eps, e[0])
	}
	return trajs, eps, nil
}

// recordPolicy is a greedy agentPolicy that records each step as a meta
// trajectory element [s, a, r].
type recordPolicy struct {
	agentPolicy
	embDim int
	el     []float64
	steps  int
	reward float64
}

func (p *recordPolicy) learn(obs []float64, r float64, _ []float64, _ bool) (int, error) {
	p.el = append(p.el, obs[:len(obs)-p.embDim]...)
	p.el = append(p.el, p.act...)
	p.el = append(p.el, r)
	p.steps++
	p.reward += r
	return p.updates, nil
}

// EmbedTrajectories embeds trajs, cut or padded to steps (meta.Bundle),
// with e (frozen: call e.SetTraining(false) first) into a new slice.
func EmbedTrajectories(e *meta.Embedder, trajs []meta.Trajectory, steps int) []float64 {
	cfg := e.Config()
	b := meta.Bundle(nil, trajs, steps, cfg.Features)
	out := make([]float64, cfg.Embed)
	e.Embed(out, b, len(trajs), steps)
	return out
}

// Identify is the nearest-neighbour identification of acceptance point 2:
// for each query embedding, the reference it is most similar to
// (meta.Similarity); hits[i] reports whether that is reference i, the same
// application's. It returns the share of hits.
func Identify(refs, queries [][]float64) (accuracy float64, hits []bool, err error) {
	if len(refs) == 0 || len(refs) != len(queries) {
		return 0, nil, fmt.Errorf("train: Identify: %d references and %d queries must be as many and not none", len(refs), len(queries))
	}
	n := 0
	for i, q := range queries {
		best, bestS := -1, math.Inf(-1)
		for j, r := range refs {
			if s := meta.Similarity(q, r); s > bestS {
				best, bestS = j, s
			}
		}
		hits = append(hits, best == i)
		if best == i {
			n++
		}
	}
	return float64(n) / float64(len(queries)), hits, nil
}

// Spearman is the rank correlation of x and y (average ranks for ties).
func Spearman(x, y []float64) (float64, error) {
	if len(x) != len(y) || len(x) < 3 {
		return 0, fmt.Errorf("train: Spearman: %d and %d values: want as many, at least 3", len(x), len(y))
	}
	rx, ry := ranks(x), ranks(y)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(len(rx))
	my /= float64(len(ry))
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0, errors.New("train: Spearman: a constant series has no rank correlation")
	}
	return sxy / math.Sqrt(sxx*syy), nil
}

// ranks returns the 1-based ranks of x, ties sharing their mean rank.
func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}

// SpearmanCI is Spearman's rank correlation of x and y with a percentile
// bootstrap interval of level (e.g. 0.95) over resamples of the pairs,
// drawn from seed.
func SpearmanCI(x, y []float64, level float64, resamples int, seed uint64) (rho, lo, hi float64, err error) {
	if rho, err = Spearman(x, y); err != nil {
		return 0, 0, 0, err
	}
	if !(level > 0 && level < 1) || resamples < 10 {
		return 0, 0, 0, fmt.Errorf("train: SpearmanCI: level %g outside (0, 1) or %d resamples below 10", level, resamples)
	}
	rnd := rand.New(rand.NewPCG(seed, 0xB007))
	n := len(x)
	bx, by := make([]float64, n), make([]float64, n)
	var stats []float64
	for range resamples {
		for i := range n {
			k := rnd.IntN(n)
			bx[i], by[i] = x[k], y[k]
		}
		if s, err := Spearman(bx, by); err == nil {
			stats = append(stats, s)
		}
	}
	if len(stats) < resamples/2 {
		return rho, math.NaN(), math.NaN(), nil
	}
	sort.Float64s(stats)
	q := func(p float64) float64 { return stats[min(len(stats)-1, int(p*float64(len(stats))))] }
	return rho, q((1 - level) / 2), q((1 + level) / 2), nil
}
