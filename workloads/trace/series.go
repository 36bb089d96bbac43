package trace

import (
	"fmt"
	"math"
	"time"
)

// Series is a regularly sampled load trace. Values[i] is the number of
// requests that arrive in [i*Step, (i+1)*Step) from the start of the series;
// values are non-negative and finite but need not be whole numbers once a
// series has been scaled or resampled.
type Series struct {
	// Name identifies the series in messages (usually the file it came from).
	Name string `json:"name,omitempty"`
	// Step is the length of one sample; it is positive.
	Step time.Duration `json:"step"`
	// Values are request counts per step.
	Values []float64 `json:"values"`
}

// Len returns the number of steps.
func (s Series) Len() int { return len(s.Values) }

// Span returns the covered duration, Len()*Step.
func (s Series) Span() time.Duration { return time.Duration(len(s.Values)) * s.Step }

// Rate returns the arrival rate of step i in requests per second.
func (s Series) Rate(i int) float64 { return s.Values[i] / s.Step.Seconds() }

// Total returns the total number of requests.
func (s Series) Total() float64 {
	var t float64
	for _, v := range s.Values {
		t += v
	}
	return t
}

// MeanRate returns the mean arrival rate in requests per second (NaN when
// the series is empty).
func (s Series) MeanRate() float64 {
	if len(s.Values) == 0 {
		return math.NaN()
	}
	return s.Total() / s.Span().Seconds()
}

// Validate reports the first problem: a non-positive step or a value that is
// negative, NaN or infinite.
func (s Series) Validate() error {
	if s.Step <= 0 {
		return fmt.Errorf("series %s: step %v must be positive", s.label(), s.Step)
	}
	for i, v := range s.Values {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("series %s: value %d (at %v) is %v, want a finite non-negative count", s.label(), i, time.Duration(i)*s.Step, v)
		}
	}
	return nil
}

// Clone returns a deep copy of s.
func (s Series) Clone() Series {
	s.Values = append([]float64(nil), s.Values...)
	return s
}

func (s Series) label() string {
	if s.Name == "" {
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", s.Name)
}
