package mpa

import (
	"errors"
	"fmt"
	"time"

	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
)

type config struct {
	hpa []hpa.Option
	vpa []vpa.Option
}

// Option configures an MPA.
type Option func(*config)

// WithHPA passes options to the inner HPA.
func WithHPA(opts ...hpa.Option) Option {
	return func(c *config) { c.hpa = append(c.hpa, opts...) }
}

// WithVPA passes options to the inner VPA (its controlled resources are
// decided per step by the combination and WithControlledResources is ignored).
func WithVPA(opts ...vpa.Option) Option {
	return func(c *config) { c.vpa = append(c.vpa, opts...) }
}

// MPA is the HPA + VPA recommender of one workload.
type MPA struct {
	b recommender.Bounds
	h *hpa.HPA
	v *vpa.VPA
}

// New returns an MPA for bounds b, called every step.
func New(b recommender.Bounds, step time.Duration, opts ...Option) (*MPA, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	h, errH := hpa.New(b, step, c.hpa...)
	v, errV := vpa.New(b, step, append(vpa.PodFloor(b), c.vpa...)...)
	if err := errors.Join(errH, errV); err != nil {
		return nil, fmt.Errorf("mpa: %w", err)
	}
	return &MPA{b: b, h: h, v: v}, nil
}

// Name implements recommender.Recommender.
func (m *MPA) Name() string { return "hpa+vpa" }

// HPA returns the inner HPA (for its Status).
func (m *MPA) HPA() *hpa.HPA { return m.h }

// VPA returns the inner VPA (for its Recommendation).
func (m *MPA) VPA() *vpa.VPA { return m.v }

// Recommend implements recommender.Recommender.
func (m *MPA) Recommend(obs recommender.Observation) recommender.Allocation {
	cur := obs.Current
	out := m.h.Recommend(obs)
	m.v.Observe(obs)
	out.Memory = m.v.Apply(cur, vpa.Memory).Memory

	st, tol := m.h.Status(), m.h.Tolerance()
	grow := st.Valid && cur.Replicas >= m.b.MaxReplicas && st.UsageRatio > 1+tol
	shrink := st.Valid && cur.Replicas <= m.b.MinReplicas && st.UsageRatio < 1-tol
	if grow || shrink {
		if a := m.v.Apply(cur, vpa.CPU|vpa.Memory); (grow && a.CPU > cur.CPU) || (shrink && a.CPU < cur.CPU) {
			out.CPU, out.Memory = a.CPU, a.Memory
		}
	}
	out = m.b.Clamp(out)
	if out.CPU != cur.CPU {
		m.h.ResetStabilization()
	}
	return out
}

var _ recommender.Recommender = (*MPA)(nil)

// State is what an MPA has learnt, for a checkpoint: its HPA's and its
// VPA's.
type State struct {
	HPA hpa.State `json:"hpa"`
	VPA vpa.State `json:"vpa"`
}

// Steps returns how many steps m has taken (those of the state it was
// restored from included).
func (m *MPA) Steps() int64 { return m.v.Calls() }

// State returns a copy of what m has learnt.
func (m *MPA) State() State { return State{HPA: m.h.State(), VPA: m.v.State()} }

// Restore replaces what m has learnt with s (see hpa.HPA.Restore and
// vpa.VPA.Restore); on error m is left as it was.
func (m *MPA) Restore(s State) error {
	old := m.h.State()
	if err := m.h.Restore(s.HPA); err != nil {
		return fmt.Errorf("mpa: %w", err)
	}
	if err := m.v.Restore(s.VPA); err != nil {
		if errOld := m.h.Restore(old); errOld != nil {
			panic(fmt.Sprintf("mpa: restoring the HPA's own state failed: %v", errOld))
		}
		return fmt.Errorf("mpa: %w", err)
	}
	return nil
}
