package agent

import (
	"fmt"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// Fake is a deterministic Agent for tests of code that drives agents. Act
// returns Action (or Policy(state) when set), Observe appends to Observed,
// Update counts calls and returns UpdateErr, and Save/Load round-trip Action
// and the counters through a checkpoint.
type Fake struct {
	// Action is returned by Act when Policy is nil.
	Action []float64
	// Policy, when set, computes the action from the state and explore flag.
	Policy func(dst, state []float64, explore bool)
	// Observed holds copies of every observed transition.
	Observed []Transition
	// Acts and Updates count calls; UpdateErr is returned by Update.
	Acts, Updates int
	UpdateErr     error
}

// NewFake returns a Fake that always acts with a copy of action.
func NewFake(action []float64) *Fake { return &Fake{Action: append([]float64(nil), action...)} }

var _ Agent = (*Fake)(nil)

// Act writes the fixed or computed action into dst.
func (f *Fake) Act(dst, state []float64, explore bool) []float64 {
	f.Acts++
	if f.Policy != nil {
		f.Policy(dst, state, explore)
		return dst
	}
	if len(dst) != len(f.Action) {
		panic(fmt.Sprintf("agent: Fake.Act: dst has %d values, action has %d", len(dst), len(f.Action)))
	}
	copy(dst, f.Action)
	return dst
}

// Observe records a deep copy of t.
func (f *Fake) Observe(t Transition) {
	t.State = append([]float64(nil), t.State...)
	t.Action = append([]float64(nil), t.Action...)
	t.Next = append([]float64(nil), t.Next...)
	f.Observed = append(f.Observed, t)
}

// Update counts the call and returns UpdateErr.
func (f *Fake) Update() (Stats, error) {
	if f.UpdateErr != nil {
		return Stats{Updates: f.Updates, Steps: len(f.Observed)}, f.UpdateErr
	}
	f.Updates++
	return Stats{Updated: true, Updates: f.Updates, Steps: len(f.Observed)}, nil
}

type fakeMeta struct {
	Acts    int `json:"acts"`
	Updates int `json:"updates"`
}

// Save writes Action and the counters.
func (f *Fake) Save(path string) error {
	c := rl.NewCheckpoint()
	c.Put("action", f.Action)
	if err := c.SetMeta(fakeMeta{Acts: f.Acts, Updates: f.Updates}); err != nil {
		return err
	}
	return rl.WriteCheckpoint(path, c)
}

// Load restores Action and the counters.
func (f *Fake) Load(path string) error {
	c, err := rl.ReadCheckpoint(path)
	if err != nil {
		return fmt.Errorf("agent: Fake.Load: %w", err)
	}
	a, ok := c.Get("action")
	if !ok {
		return fmt.Errorf("agent: Fake.Load: %s has no entry \"action\"", path)
	}
	var m fakeMeta
	if err := c.Meta(&m); err != nil {
		return fmt.Errorf("agent: Fake.Load: %s: %w", path, err)
	}
	f.Action = append(f.Action[:0], a...)
	f.Acts, f.Updates = m.Acts, m.Updates
	return nil
}
