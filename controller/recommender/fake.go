package recommender

// Fake is a Recommender for tests: it records every observation and returns
// the scripted allocations in order, repeating the last one; with no script it
// returns the observed current allocation.
type Fake struct {
	ID           string       // Name(); "fake" when empty
	Script       []Allocation // allocations to return, one per call
	Observations []Observation
}

// NewFake returns a Fake that plays script (a single entry is a fixed answer).
func NewFake(script ...Allocation) *Fake { return &Fake{Script: script} }

// Name implements Recommender.
func (f *Fake) Name() string {
	if f.ID == "" {
		return "fake"
	}
	return f.ID
}

// Recommend implements Recommender.
func (f *Fake) Recommend(obs Observation) Allocation {
	n := len(f.Observations)
	f.Observations = append(f.Observations, obs)
	if len(f.Script) == 0 {
		return obs.Current
	}
	return f.Script[min(n, len(f.Script)-1)]
}

var _ Recommender = (*Fake)(nil)
