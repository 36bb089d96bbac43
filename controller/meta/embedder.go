package meta

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// Config describes the meta learner's network.
type Config struct {
	// Features is the width of one trajectory element X_t = [s_t, a_t, r_t]
	// (state, action and reward, normalised as the agent normalises them).
	Features int
	// Hidden is the width of each direction of each BiGRU layer; Layers the
	// number of stacked bidirectional layers.
	Hidden, Layers int
	// FC is the width of the fully connected layer after the pooled BiGRU
	// summary; Embed the width of the embedding.
	FC, Embed int
	// Dropout is the drop probability applied to the pooled summary in
	// training mode.
	Dropout float64
	// Output is the embedding layer's activation (the FC layer before it
	// is ReLU). The paper's ReLU lets whole embeddings die: trained for
	// identification (Contrast), every unit of a small embedder's ReLU
	// output was zero for every task within 300 steps, and the
	// similarity of two zero embeddings tells nothing. Tanh, the default,
	// is bounded and keeps a gradient everywhere.
	Output rl.Activation
}

// DefaultConfig is the paper's network (digest §3): BiGRU 2 × 256, FC 256 →
// FC 64 (ReLU), dropout 0.05, for elements features wide.
func DefaultConfig(features int) Config {
	return Config{Features: features, Hidden: 256, Layers: 2, FC: 256, Embed: 64, Dropout: 0.05, Output: rl.Tanh}
}

func (c Config) validate() error {
	var errs []error
	if c.Features <= 0 {
		errs = append(errs, fmt.Errorf("features %d must be positive", c.Features))
	}
	if c.Hidden <= 0 || c.Layers <= 0 {
		errs = append(errs, fmt.Errorf("BiGRU %d layers × %d units must be positive", c.Layers, c.Hidden))
	}
	if c.FC <= 0 || c.Embed <= 0 {
		errs = append(errs, fmt.Errorf("FC %d and embedding %d widths must be positive", c.FC, c.Embed))
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		errs = append(errs, fmt.Errorf("dropout %v outside [0, 1)", c.Dropout))
	}
	return errors.Join(errs...)
}

// Embedder is the meta learner's network: a stacked bidirectional GRU runs
// over the time axis of each of the M trajectories of a bundle (never over
// the feature axis, the artifact's defect, digest §8); each trajectory is
// summarised by the forward direction's state after its last step and the
// backward direction's state after its first, [→h_T, ←h_1]; the summaries
// are averaged over the bundle, dropped out in training mode, and two ReLU
// layers give the embedding. The embedding is constant within an episode,
// so a learner computes it once (Embed), adds the gradient of every update
// of the episode that used it (AddGrad) and back-propagates once
// (Backward). It is not safe for concurrent use.
type Embedder struct {
	cfg  Config
	gru  *rl.BiGRU
	drop *rl.Dropout
	head *rl.MLP

	sizes    []int     // trajectories per bundle of the last Embed
	total, t int       // trajectories and steps of the last Embed, 0 before any
	seq      []float64 // total×T×2H: the BiGRU's top-layer states
	pooled   []float64 // bundles×2H: mean of each bundle's summaries
	dropped  []float64 // bundles×2H: pooled after dropout
	emb      []float64 // bundles×Embed: the last embeddings
	dEmb     []float64 // bundles×Embed: accumulated gradient w.r.t. them
	dPooled  []float64 // bundles×2H
	dSeq     []float64 // total×T×2H
	pending  bool      // whether dEmb holds gradient not yet back-propagated
}

// NewEmbedder builds the network of cfg with weights drawn from rnd.
func NewEmbedder(cfg Config, rnd *rand.Rand) (*Embedder, error) {
	if rnd == nil {
		return nil, errors.New("meta: NewEmbedder: nil random source")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("meta: NewEmbedder: %w", err)
	}
	gru, err := rl.NewBiGRU(rl.BiGRUConfig{In: cfg.Features, Hidden: cfg.Hidden, Layers: cfg.Layers}, rnd)
	if err != nil {
		return nil, fmt.Errorf("meta: NewEmbedder: %w", err)
	}
	drop, err := rl.NewDropout(cfg.Dropout, rnd)
	if err != nil {
		return nil, fmt.Errorf("meta: NewEmbedder: %w", err)
	}
	head, err := rl.NewMLP(rl.MLPConfig{Sizes: []int{2 * cfg.Hidden, cfg.FC, cfg.Embed}, Hidden: rl.ReLU, Output: cfg.Output}, rnd)
	if err != nil {
		return nil, fmt.Errorf("meta: NewEmbedder: %w", err)
	}
	return &Embedder{cfg: cfg, gru: gru, drop: drop, head: head}, nil
}

// Config returns the network's configuration.
func (e *Embedder) Config() Config { return e.cfg }

// Params returns the network's parameter groups: the BiGRU's and the fully
// connected head's. An optimiser steps each.
func (e *Embedder) Params() []*rl.Params { return []*rl.Params{e.gru.Params(), e.head.Params()} }

// SetTraining switches dropout between training and evaluation (frozen
// inference) mode.
func (e *Embedder) SetTraining(on bool) { e.drop.SetTraining(on) }

// Embed writes into dst (Config().Embed wide) the embedding of a bundle of m
// trajectories of t steps each, bundle[i][s] = X_s of trajectory i
// (row-major m×t×Features), and discards any gradient not yet
// back-propagated. Every trajectory starts from a zero hidden state.
func (e *Embedder) Embed(dst, bundle []float64, m, t int) {
	e.EmbedBatch(dst, bundle, []int{m}, t)
}

// EmbedBatch embeds len(sizes) bundles at once, bundle k holding sizes[k]
// trajectories, all of t steps: bundle is their trajectories one bundle
// after the other (row-major Σsizes×t×Features) and dst receives the
// embeddings (row-major len(sizes)×Embed). The BiGRU runs over every
// trajectory in one batch, which is much faster than one Embed per bundle.
// It discards any gradient not yet back-propagated.
func (e *Embedder) EmbedBatch(dst, bundle []float64, sizes []int, t int) {
	nb, total := len(sizes), 0
	for _, m := range sizes {
		if m <= 0 {
			panic(fmt.Sprintf("meta: Embed: bundles of %v trajectories × %d steps must be non-empty", sizes, t))
		}
		total += m
	}
	if nb == 0 || t <= 0 {
		panic(fmt.Sprintf("meta: Embed: bundles of %v trajectories × %d steps must be non-empty", sizes, t))
	}
	if len(bundle) != total*t*e.cfg.Features {
		panic(fmt.Sprintf("meta: Embed: bundle has %d values, want %d×%d×%d", len(bundle), total, t, e.cfg.Features))
	}
	if len(dst) != nb*e.cfg.Embed {
		panic(fmt.Sprintf("meta: Embed: destination has %d values, want %d×%d", len(dst), nb, e.cfg.Embed))
	}
	H, h2 := e.cfg.Hidden, 2*e.cfg.Hidden
	e.sizes = append(e.sizes[:0], sizes...)
	e.total, e.t = total, t
	e.seq = grow(e.seq, total*t*h2)
	e.gru.Forward(e.seq, bundle, total, t)
	e.pooled = grow(e.pooled, nb*h2)
	clear(e.pooled)
	b := 0
	for k, m := range e.sizes {
		inv := 1 / float64(m)
		pooled := e.pooled[k*h2 : (k+1)*h2]
		for range m {
			last := e.seq[(b*t+t-1)*h2:] // forward direction after the last step
			first := e.seq[(b*t)*h2+H:]  // backward direction after the first step
			for j := range H {
				pooled[j] += inv * last[j]
				pooled[H+j] += inv * first[j]
			}
			b++
		}
	}
	e.embedPooled(dst, nb)
	e.dEmb = grow(e.dEmb, nb*e.cfg.Embed)
	clear(e.dEmb)
	e.pending = false
}

// embedPooled runs the pooled summaries of nb bundles through dropout and
// the head into e.emb and dst.
func (e *Embedder) embedPooled(dst []float64, nb int) {
	h2 := 2 * e.cfg.Hidden
	e.dropped = grow(e.dropped, nb*h2)
	e.drop.Forward(e.dropped, e.pooled)
	e.emb = grow(e.emb, nb*e.cfg.Embed)
	e.head.Forward(e.emb, e.dropped, nb)
	copy(dst, e.emb)
}

// Summarise writes into dst (m×2·Hidden) the summary [→h_T, ←h_1] of each
// of m trajectories of t steps (row-major m×t×Features): the part of Embed
// done per trajectory. A trajectory's summary does not depend on the others
// in its batch, so a caller embedding overlapping bundles with frozen
// weights summarises each trajectory once and embeds with EmbedSummaries
// (FLASH does, with meta updates off). It discards any gradient not yet
// back-propagated: no gradient flows through a summary.
func (e *Embedder) Summarise(dst, trajs []float64, m, t int) {
	H, h2 := e.cfg.Hidden, 2*e.cfg.Hidden
	if m <= 0 || t <= 0 || len(trajs) != m*t*e.cfg.Features || len(dst) != m*h2 {
		panic(fmt.Sprintf("meta: Summarise: %d trajectories × %d steps in %d values (want %d×%d×%d) into %d (want %d×%d)",
			m, t, len(trajs), m, t, e.cfg.Features, len(dst), m, h2))
	}
	e.forget()
	e.seq = grow(e.seq, m*t*h2)
	e.gru.Forward(e.seq, trajs, m, t)
	for i := range m {
		copy(dst[i*h2:i*h2+H], e.seq[(i*t+t-1)*h2:])   // forward direction after the last step
		copy(dst[i*h2+H:(i+1)*h2], e.seq[(i*t)*h2+H:]) // backward direction after the first step
	}
}

// EmbedSummaries writes into dst (Config().Embed wide) the embedding of a
// bundle of m trajectories given by their summaries (row-major m×2·Hidden,
// from Summarise) in the bundle's order: what Embed gives for that bundle.
// It discards any gradient not yet back-propagated and leaves none to add
// to (AddGrad needs an Embed).
func (e *Embedder) EmbedSummaries(dst, summaries []float64, m int) {
	h2 := 2 * e.cfg.Hidden
	if m <= 0 || len(summaries) != m*h2 || len(dst) != e.cfg.Embed {
		panic(fmt.Sprintf("meta: EmbedSummaries: %d summaries in %d values (want %d×%d) into %d (want %d)", m, len(summaries), m, h2, len(dst), e.cfg.Embed))
	}
	e.forget()
	e.pooled = grow(e.pooled, h2)
	clear(e.pooled)
	inv := 1 / float64(m)
	for i := range m {
		for j, v := range summaries[i*h2 : (i+1)*h2] {
			e.pooled[j] += inv * v
		}
	}
	e.embedPooled(dst, 1)
}

// forget drops the state of the last Embed: nothing is left to
// back-propagate until the next.
func (e *Embedder) forget() {
	e.sizes, e.total, e.t = e.sizes[:0], 0, 0
	e.pending = false
}

// fingerprint hashes the network's weights (FNV-1a over their bits, four
// interleaved lanes), so that a cache of summaries notices weights changed
// by anyone holding Params.
func (e *Embedder) fingerprint() uint64 {
	const prime = 1099511628211
	lanes := [4]uint64{14695981039346656037, 14695981039346656037 ^ 1, 14695981039346656037 ^ 2, 14695981039346656037 ^ 3}
	for _, p := range e.Params() {
		v := p.Values()
		n := len(v) &^ 3
		for i := 0; i < n; i += 4 {
			lanes[0] = (lanes[0] ^ math.Float64bits(v[i])) * prime
			lanes[1] = (lanes[1] ^ math.Float64bits(v[i+1])) * prime
			lanes[2] = (lanes[2] ^ math.Float64bits(v[i+2])) * prime
			lanes[3] = (lanes[3] ^ math.Float64bits(v[i+3])) * prime
		}
		for _, x := range v[n:] {
			lanes[0] = (lanes[0] ^ math.Float64bits(x)) * prime
		}
		lanes[1] = (lanes[1] ^ uint64(len(v))) * prime
	}
	return ((lanes[0]*prime^lanes[1])*prime^lanes[2])*prime ^ lanes[3]
}

// AddGrad adds d (the loss gradient with respect to the last embedding, or
// after EmbedBatch with respect to every embedding, row-major) to the
// gradient that Backward will back-propagate.
func (e *Embedder) AddGrad(d []float64) {
	if e.total == 0 {
		panic("meta: AddGrad: no Embed yet")
	}
	if len(d) != len(e.dEmb) {
		panic(fmt.Sprintf("meta: AddGrad: gradient has %d values, want %d", len(d), len(e.dEmb)))
	}
	for i, v := range d {
		e.dEmb[i] += v
	}
	e.pending = true
}

// Backward back-propagates the gradient accumulated by AddGrad since the
// last Embed through the network, adds the parameter gradients to Params()
// and, unless dx is nil, writes the gradient with respect to the bundle into
// dx (m×t×Features). It then clears the accumulated gradient. It reports
// whether there was any gradient to back-propagate.
func (e *Embedder) Backward(dx []float64) bool {
	if !e.pending {
		return false
	}
	H, h2, t, nb := e.cfg.Hidden, 2*e.cfg.Hidden, e.t, len(e.sizes)
	e.dPooled = grow(e.dPooled, nb*h2)
	e.head.Backward(e.dPooled, e.dEmb, nb)
	e.drop.Backward(e.dPooled, e.dPooled)
	e.dSeq = grow(e.dSeq, e.total*t*h2)
	clear(e.dSeq)
	b := 0
	for k, m := range e.sizes {
		inv := 1 / float64(m)
		dPooled := e.dPooled[k*h2 : (k+1)*h2]
		for range m {
			last := e.dSeq[(b*t+t-1)*h2:]
			first := e.dSeq[(b*t)*h2+H:]
			for j := range H {
				last[j] += inv * dPooled[j]
				first[j] += inv * dPooled[H+j]
			}
			b++
		}
	}
	e.gru.Backward(dx, e.dSeq, e.total, t)
	clear(e.dEmb)
	e.pending = false
	return true
}

// ZeroGrad clears the parameter gradients.
func (e *Embedder) ZeroGrad() {
	for _, p := range e.Params() {
		p.ZeroGrad()
	}
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
