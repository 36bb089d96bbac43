package meta

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// ContrastConfig is the meta learner's identification objective, an
// addition to the paper's training: the base learner's loss alone gives the
// embedder no reason to tell applications apart where their best policies
// look alike, and measured here it did not (held-out identification 16 %,
// as the untrained network: docs/agents.md). Each step draws Tasks
// applications, splits each one's buffered trajectories at random into two
// disjoint views of at most Views trajectories, embeds the 2·Tasks bundles
// and lowers the symmetric InfoNCE loss (van den Oord et al. 2018) over
// the FLASH similarity scaled by 1/Temperature: each view must be more
// similar to the other view of its own application than to any other
// application's, the nearest-neighbour identification that AWARE's
// embedding is meant to support and `aware meta eval` measures. Its Adam
// optimiser is separate from the base learner's gradient steps.
type ContrastConfig struct {
	Tasks, Views int
	Temperature  float64
	LR           float64
}

// DefaultContrast is 16 applications of two views of 8 trajectories, τ =
// 0.1, learning rate 3e-4 (the meta learner's). Views of 8 lowered the
// loss and identified held-out applications better than views of 4
// (docs/agents.md).
func DefaultContrast() ContrastConfig {
	return ContrastConfig{Tasks: 16, Views: 8, Temperature: 0.1, LR: 3e-4}
}

func (c ContrastConfig) validate() error {
	if c.Tasks < 2 || c.Views < 1 || !(c.Temperature > 0) || !(c.LR > 0) {
		return fmt.Errorf("meta: contrast: %d tasks (at least 2), %d trajectories per view, temperature %v and learning rate %v must be positive", c.Tasks, c.Views, c.Temperature, c.LR)
	}
	return nil
}

// Contrast applies one step of the identification objective cfg, drawing
// applications and views from rnd, and returns its loss before the step
// and the number of applications it used; with fewer than two applications
// holding two trajectories each it does nothing (0, 0). It applies any
// pending base-learner gradient first and runs the embedder without
// dropout, all 2·Tasks bundles in one batch (Embedder.EmbedBatch). Every
// task's embedding is stale afterwards.
func (f *FLASH) Contrast(rnd *rand.Rand, cfg ContrastConfig) (loss float64, used int, err error) {
	if err := cfg.validate(); err != nil {
		return 0, 0, err
	}
	if rnd == nil {
		return 0, 0, errors.New("meta: contrast: nil random source")
	}
	if !f.updates {
		return 0, 0, errors.New("meta: contrast: meta updates are off")
	}
	names := make([]string, 0, len(f.tasks))
	for n, t := range f.tasks {
		if t.buf.Len() >= 2 {
			names = append(names, n)
		}
	}
	if len(names) < 2 {
		return 0, 0, nil
	}
	slices.Sort(names) // map order is random; the draw must be the seed's
	rnd.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	names = names[:min(cfg.Tasks, len(names))]

	// Two disjoint views per application, laid out for one batched pass.
	n, w, steps, d := len(names), f.emb.cfg.Features, f.opts.Steps, f.emb.cfg.Embed
	sizes := make([]int, 0, 2*n)
	var trajs []Trajectory
	for _, name := range names {
		items := f.tasks[name].buf.items
		v := min(cfg.Views, len(items)/2)
		perm := rnd.Perm(len(items))
		for k := range 2 * v {
			trajs = append(trajs, items[perm[k]].Trajectory)
		}
		sizes = append(sizes, v, v)
	}
	bundle := Bundle(nil, trajs, steps, w)

	f.Step()
	f.emb.SetTraining(false)
	defer f.emb.SetTraining(true)
	z := make([]float64, 2*n*d)
	f.emb.EmbedBatch(z, bundle, sizes, steps)
	dz := make([]float64, 2*n*d)
	a, b, da, db := make([][]float64, n), make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for i := range n {
		a[i], b[i] = z[2*i*d:(2*i+1)*d], z[(2*i+1)*d:(2*i+2)*d]
		da[i], db[i] = dz[2*i*d:(2*i+1)*d], dz[(2*i+1)*d:(2*i+2)*d]
	}
	loss = InfoNCE(da, db, a, b, cfg.Temperature)

	if f.contrastOpt == nil {
		for range f.emb.Params() {
			f.contrastOpt = append(f.contrastOpt, rl.NewAdam(cfg.LR))
		}
	}
	for _, o := range f.contrastOpt {
		o.LR = cfg.LR
	}
	f.emb.AddGrad(dz)
	f.backprop(f.contrastOpt)
	f.current = ""
	for _, t := range f.tasks {
		t.stale = true
	}
	return loss, n, nil
}

// InfoNCE returns the symmetric InfoNCE loss of n pairs of embeddings
// (a[i], b[i] of the same application; every other pairing a negative)
// with logits Similarity/tau, and writes its gradient with respect to
// a[i] and b[i] into da[i] and db[i]:
//
//	L = 1/(2n) Σ_i [−log softmax_j(S(a_i, b_j)/τ)_i − log softmax_j(S(b_i, a_j)/τ)_i].
func InfoNCE(da, db, a, b [][]float64, tau float64) float64 {
	n := len(a)
	if len(b) != n || len(da) != n || len(db) != n || n == 0 {
		panic(fmt.Sprintf("meta: InfoNCE: %d, %d embeddings and %d, %d gradients must be as many and not none", len(a), len(b), len(da), len(db)))
	}
	for i := range n {
		clear(da[i])
		clear(db[i])
	}
	s := make([]float64, n*n) // s[i*n+j] = S(a_i, b_j)/τ
	for i := range n {
		for j := range n {
			s[i*n+j] = Similarity(a[i], b[j]) / tau
		}
	}
	// g[i*n+j] = ∂L/∂s_ij from both directions (rows: a against every b;
	// columns: b against every a).
	g := make([]float64, n*n)
	p := make([]float64, n)
	loss := 0.0
	scale := 1 / (2 * float64(n))
	for dir := range 2 {
		for i := range n {
			at := func(j int) int { // index of the logit of anchor i against candidate j
				if dir == 0 {
					return i*n + j
				}
				return j*n + i
			}
			mx := math.Inf(-1)
			for j := range n {
				mx = math.Max(mx, s[at(j)])
			}
			sum := 0.0
			for j := range n {
				p[j] = math.Exp(s[at(j)] - mx)
				sum += p[j]
			}
			loss += scale * (mx + math.Log(sum) - s[at(i)])
			for j := range n {
				gr := p[j] / sum
				if j == i {
					gr--
				}
				g[at(j)] += scale * gr
			}
		}
	}
	ga, gb := make([]float64, len(a[0])), make([]float64, len(a[0]))
	for i := range n {
		for j := range n {
			if g[i*n+j] == 0 {
				continue
			}
			SimilarityGrad(ga, gb, a[i], b[j])
			c := g[i*n+j] / tau
			for k := range ga {
				da[i][k] += c * ga[k]
				db[j][k] += c * gb[k]
			}
		}
	}
	return loss
}

// SimilarityGrad writes the gradient of Similarity(x, y) with respect to x
// into dx and with respect to y into dy. Where a norm or the distance is
// zero (S is not differentiable there) that term contributes nothing.
func SimilarityGrad(dx, dy, x, y []float64) {
	if len(x) != len(y) || len(dx) != len(x) || len(dy) != len(x) {
		panic(fmt.Sprintf("meta: SimilarityGrad: embeddings of %d and %d values, gradients of %d and %d", len(x), len(y), len(dx), len(dy)))
	}
	dot, nx, ny, dist := similarityTerms(x, y)
	clear(dx)
	clear(dy)
	if nx+ny == 0 {
		return
	}
	// S = (1 − ED + CS)/2, ED = dist/(nx+ny), CS = dot/(nx·ny).
	sum := nx + ny
	for i := range x {
		var dEDx, dEDy, dCSx, dCSy float64
		if dist > 0 {
			dEDx = (x[i] - y[i]) / dist / sum
			dEDy = -dEDx
		}
		if nx > 0 {
			dEDx -= dist / (sum * sum) * x[i] / nx
		}
		if ny > 0 {
			dEDy -= dist / (sum * sum) * y[i] / ny
		}
		if nx > 0 && ny > 0 {
			dCSx = y[i]/(nx*ny) - dot/(nx*nx*nx*ny)*x[i]
			dCSy = x[i]/(nx*ny) - dot/(nx*ny*ny*ny)*y[i]
		}
		dx[i] = (-dEDx + dCSx) / 2
		dy[i] = (-dEDy + dCSy) / 2
	}
}
