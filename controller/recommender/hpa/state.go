package hpa

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// State is what an HPA remembers between calls, for a checkpoint: the
// recommendations behind its stabilisation windows and the scale events
// behind its rate policies (upstream's recommendations and scaleUpEvents /
// scaleDownEvents, kept in the controller's memory and lost on restart),
// and the last call's status.
type State struct {
	Step  time.Duration `json:"step"`
	Calls int64         `json:"calls"`
	// Fresh says the next call records the current replicas first (a new
	// HPA, or stabilisation reset).
	Fresh bool `json:"fresh,omitempty"`
	// Records are the calls still remembered, oldest first.
	Records []Record `json:"records,omitempty"`
	Status  Status   `json:"status"`
}

// Record is what one call left: the range of replica recommendations it
// recorded (when it recorded any) and the replicas it added or removed.
type Record struct {
	Call       int64 `json:"call"`
	Recorded   bool  `json:"recorded,omitempty"`
	Min        int   `json:"min,omitempty"`
	Max        int   `json:"max,omitempty"`
	ScaledUp   int   `json:"scaledUp,omitempty"`
	ScaledDown int   `json:"scaledDown,omitempty"`
}

// State returns a copy of what h remembers.
func (h *HPA) State() State {
	s := State{Step: h.step, Calls: h.n, Fresh: h.fresh, Status: h.status}
	for age := len(h.ring) - 1; age >= 0; age-- {
		if sl := h.at(age); sl != nil {
			s.Records = append(s.Records, Record{Call: sl.step, Recorded: sl.hasRec, Min: sl.recMin, Max: sl.recMax, ScaledUp: sl.scaledUp, ScaledDown: sl.scaledDown})
		}
	}
	return s
}

// Restore replaces what h remembers with s, taken from an HPA of the same
// step. Records older than h's longest window or policy period are dropped
// (h would never look at them). It refuses a state that is not one an HPA
// can be in, naming the field, and then leaves h as it was.
func (h *HPA) Restore(s State) error {
	if err := checkState(s, h.step); err != nil {
		return fmt.Errorf("hpa: restore: %w", err)
	}
	h.clear()
	h.n, h.fresh, h.status = s.Calls, s.Fresh, s.Status
	for _, r := range s.Records {
		if s.Calls-r.Call >= int64(len(h.ring)) {
			continue
		}
		h.ring[r.Call%int64(len(h.ring))] = slot{step: r.Call, hasRec: r.Recorded, recMin: r.Min, recMax: r.Max, scaledUp: r.ScaledUp, scaledDown: r.ScaledDown}
	}
	return nil
}

func checkState(s State, step time.Duration) error {
	if s.Step != step {
		return fmt.Errorf("step %v, this HPA's is %v", s.Step, step)
	}
	if s.Calls < 0 {
		return fmt.Errorf("calls %d is negative", s.Calls)
	}
	var errs []error
	last := int64(-1)
	for i, r := range s.Records {
		// The current call's slot exists before the call ends (the first
		// record of a fresh HPA), so a record may be at Calls.
		switch {
		case r.Call < 0:
			errs = append(errs, fmt.Errorf("records[%d]: call %d is negative", i, r.Call))
		case r.Call <= last:
			errs = append(errs, fmt.Errorf("records[%d]: call %d is not after the previous record's %d", i, r.Call, last))
		case r.Call > s.Calls:
			errs = append(errs, fmt.Errorf("records[%d]: call %d is after the %d calls made", i, r.Call, s.Calls))
		}
		if r.Recorded && (r.Min < 0 || r.Max < r.Min) {
			errs = append(errs, fmt.Errorf("records[%d]: recommendations %d..%d, want 0 <= min <= max", i, r.Min, r.Max))
		}
		if r.ScaledUp < 0 || r.ScaledDown < 0 {
			errs = append(errs, fmt.Errorf("records[%d]: scaled up %d and down %d must not be negative", i, r.ScaledUp, r.ScaledDown))
		}
		last = max(last, r.Call)
	}
	st := s.Status
	if st.Replicas < 0 || st.MetricReplicas < 0 || !(st.Utilization >= 0) || !(st.UsageRatio >= 0) || math.IsInf(st.Utilization, 0) || math.IsInf(st.UsageRatio, 0) {
		errs = append(errs, fmt.Errorf("status %+v: replicas, utilisation and ratio must be finite and not negative", st))
	}
	return errors.Join(errs...)
}
