package transfer

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/aware-autoscaler/aware/controller/forecast"
	"github.com/aware-autoscaler/aware/gym"
)

// Plus is TL+'s environment: the wrapped environment's state followed by
// the forecast load change for the next step (log2 of forecast over the
// current arrival rate, as gym.LoadChange scales it) and the table's
// features of the current allocation (Table.Features). The forecaster and
// the table live as long as the Plus: they describe the application, not
// an episode.
type Plus struct {
	gym.Env
	fc    *forecast.Online
	table *Table
	feat  []float64
}

// PlusDim is the number of features Plus appends.
const PlusDim = 1 + FeatureDim

// NewPlus wraps env with forecaster fc and table t.
func NewPlus(env gym.Env, fc *forecast.Online, t *Table) (*Plus, error) {
	if env == nil || fc == nil || t == nil {
		return nil, fmt.Errorf("transfer: NewPlus needs an environment, a forecaster and a table")
	}
	return &Plus{Env: env, fc: fc, table: t, feat: make([]float64, PlusDim)}, nil
}

// Table returns the allocation → performance table.
func (p *Plus) Table() *Table { return p.table }

// ObservationSpace is the wrapped space followed by load_forecast in
// [−1, 1] and the table's features in [0, 1].
func (p *Plus) ObservationSpace() gym.Space {
	s := p.Env.ObservationSpace()
	out := gym.Space{Names: slices.Clone(s.Names), Low: slices.Clone(s.Low), High: slices.Clone(s.High)}
	names := []string{"load_forecast", "table_cpu_util", "table_memory_util"}
	for _, n := range []string{"here", "replicas_down", "replicas_up", "cpu_down", "cpu_up", "memory_down", "memory_up"} {
		names = append(names, "table_sp_"+n, "table_known_"+n)
	}
	for i, n := range names {
		lo := 0.0
		if i == 0 {
			lo = -1
		}
		out.Names, out.Low, out.High = append(out.Names, n), append(out.Low, lo), append(out.High, 1)
	}
	return out
}

// Reset resets the wrapped environment and appends the features of its
// first step (the forecast then sees the first arrival rate).
func (p *Plus) Reset(ctx context.Context, seed uint64) ([]float64, gym.Info, error) {
	obs, info, err := p.Env.Reset(ctx, seed)
	if err != nil {
		return nil, info, err
	}
	f, err := p.features(info, false)
	if err != nil {
		return nil, info, err
	}
	return slices.Concat(obs, f), info, nil
}

// Step steps the wrapped environment, records the step in the table and
// the forecaster, and appends the features.
func (p *Plus) Step(ctx context.Context, action []float64) ([]float64, float64, bool, bool, gym.Info, error) {
	obs, r, term, trunc, info, err := p.Env.Step(ctx, action)
	if err != nil {
		return nil, r, term, trunc, info, err
	}
	f, err := p.features(info, true)
	if err != nil {
		return nil, r, term, trunc, info, err
	}
	return slices.Concat(obs, f), r, term, trunc, info, nil
}

// features updates the forecaster (and, for a measured step, the table)
// with info and writes the features.
func (p *Plus) features(info gym.Info, record bool) ([]float64, error) {
	m := info.Metrics
	a := m.Allocation()
	// A missing arrival rate leaves the forecaster's history as it was and
	// the forecast feature at "no change".
	p.feat[0] = 0
	if rate := m.ArrivalRate; rate >= 0 && !math.IsInf(rate, 1) {
		if err := p.fc.Observe(rate); err != nil {
			return nil, err
		}
		p.feat[0] = gym.LoadChange(p.fc.Next(), rate)
	}
	if record {
		cpu, mem := gym.Utilization(m)
		if err := p.table.Record(a, info.SP, cpu, mem); err != nil {
			return nil, err
		}
	}
	p.table.Features(p.feat[1:], a)
	return p.feat, nil
}
