package gym

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// Embedded is an Env whose observations carry an embedding vector after
// the wrapped environment's state: obs‖z. The meta learner describes an
// application by such a vector and an agent built for the wider state uses
// it as input; SetEmbedding changes it between (or during) episodes.
type Embedded struct {
	Env
	z []float64
}

// Embed wraps env so that its observations end with z (copied).
func Embed(env Env, z []float64) (*Embedded, error) {
	e := &Embedded{Env: env}
	if err := e.SetEmbedding(z); err != nil {
		return nil, err
	}
	return e, nil
}

// SetEmbedding replaces the embedding; its length must not change.
func (e *Embedded) SetEmbedding(z []float64) error {
	if len(z) == 0 {
		return fmt.Errorf("gym: embedding is empty")
	}
	if e.z != nil && len(z) != len(e.z) {
		return fmt.Errorf("gym: embedding has %d values, want %d", len(z), len(e.z))
	}
	for i, v := range z {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("gym: embedding[%d] is %v", i, v)
		}
	}
	e.z = slices.Clone(z)
	return nil
}

// Embedding returns the current embedding (shared; do not modify).
func (e *Embedded) Embedding() []float64 { return e.z }

// ObservationSpace is the wrapped space followed by one unbounded
// dimension per embedding entry, named embedding_0….
func (e *Embedded) ObservationSpace() Space {
	s := e.Env.ObservationSpace()
	out := Space{Names: slices.Clone(s.Names), Low: slices.Clone(s.Low), High: slices.Clone(s.High)}
	for i := range e.z {
		out.Names = append(out.Names, fmt.Sprintf("embedding_%d", i))
		out.Low = append(out.Low, math.Inf(-1))
		out.High = append(out.High, math.Inf(1))
	}
	return out
}

// Reset resets the wrapped environment and appends the embedding.
func (e *Embedded) Reset(ctx context.Context, seed uint64) ([]float64, Info, error) {
	obs, info, err := e.Env.Reset(ctx, seed)
	if err != nil {
		return nil, info, err
	}
	return slices.Concat(obs, e.z), info, nil
}

// Step steps the wrapped environment and appends the embedding.
func (e *Embedded) Step(ctx context.Context, action []float64) ([]float64, float64, bool, bool, Info, error) {
	obs, r, term, trunc, info, err := e.Env.Step(ctx, action)
	if err != nil {
		return nil, r, term, trunc, info, err
	}
	return slices.Concat(obs, e.z), r, term, trunc, info, nil
}
