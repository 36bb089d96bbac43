package trace

import (
	"fmt"
	"math"
	"time"
)

// Resample returns s at a new step length, treating each original step as
// arriving at a constant rate: when coarsening, counts of the covered steps
// are summed (a new step that straddles an old one takes the overlapping
// fraction); when refining, each count is split evenly over the new steps it
// covers, so the rate is kept. Totals are preserved except for a trailing
// part shorter than the new step, which is dropped. It is an error if s
// spans less than one new step.
func Resample(s Series, step time.Duration) (Series, error) {
	if err := s.Validate(); err != nil {
		return Series{}, err
	}
	if step <= 0 {
		return Series{}, fmt.Errorf("resample %s: step %v must be positive", s.label(), step)
	}
	n := int(s.Span() / step)
	if n == 0 {
		return Series{}, fmt.Errorf("resample %s: spans %v, less than one step of %v", s.label(), s.Span(), step)
	}
	out := Series{Name: s.Name, Step: step, Values: make([]float64, n)}
	a, b := int64(s.Step), int64(step)
	switch {
	case a == b:
		copy(out.Values, s.Values)
	case b%a == 0: // coarsen by a whole factor
		k := int(b / a)
		for j := range out.Values {
			var sum float64
			for _, v := range s.Values[j*k : (j+1)*k] {
				sum += v
			}
			out.Values[j] = sum
		}
	case a%b == 0: // refine by a whole factor
		k := int(a / b)
		for j := range out.Values {
			out.Values[j] = s.Values[j/k] / float64(k)
		}
	default: // overlap of [i*a, (i+1)*a) with [j*b, (j+1)*b)
		i := 0
		for j := range out.Values {
			lo, hi := int64(j)*b, int64(j+1)*b
			var sum float64
			for ; i < len(s.Values); i++ {
				ilo, ihi := int64(i)*a, int64(i+1)*a
				sum += s.Values[i] * float64(min(hi, ihi)-max(lo, ilo)) / float64(a)
				if ihi > hi {
					break // old step i continues into the next new step
				}
			}
			out.Values[j] = sum
		}
	}
	return out, nil
}

// Normalize returns s divided by its mean count per step, so that the mean
// value is 1. It is an error if s is empty or all zero.
func Normalize(s Series) (Series, error) {
	if err := s.Validate(); err != nil {
		return Series{}, err
	}
	mean := s.Total() / float64(len(s.Values))
	if !(mean > 0) {
		return Series{}, fmt.Errorf("normalize %s: mean is %v, want positive", s.label(), mean)
	}
	return scale(s, 1/mean), nil
}

// ScaleToMean returns s scaled so that its mean rate is rate requests per
// second; the shape is unchanged.
func ScaleToMean(s Series, rate float64) (Series, error) {
	if !(rate >= 0) || math.IsInf(rate, 0) {
		return Series{}, fmt.Errorf("scale %s: target rate %v must be a finite non-negative number of requests per second", s.label(), rate)
	}
	if err := s.Validate(); err != nil {
		return Series{}, err
	}
	mean := s.MeanRate()
	if !(mean > 0) {
		return Series{}, fmt.Errorf("scale %s: mean rate is %v, want positive", s.label(), mean)
	}
	return scale(s, rate/mean), nil
}

func scale(s Series, f float64) Series {
	out := Series{Name: s.Name, Step: s.Step, Values: make([]float64, len(s.Values))}
	for i, v := range s.Values {
		out.Values[i] = v * f
	}
	return out
}

// Window returns the part of s from start for length (both whole multiples
// of s.Step, within the series). The values are copied.
func Window(s Series, start, length time.Duration) (Series, error) {
	if s.Step <= 0 {
		return Series{}, fmt.Errorf("window %s: step %v must be positive", s.label(), s.Step)
	}
	switch {
	case start < 0 || start%s.Step != 0:
		return Series{}, fmt.Errorf("window %s: start %v is not a non-negative multiple of the step %v", s.label(), start, s.Step)
	case length <= 0 || length%s.Step != 0:
		return Series{}, fmt.Errorf("window %s: length %v is not a positive multiple of the step %v", s.label(), length, s.Step)
	case start > s.Span() || length > s.Span()-start:
		return Series{}, fmt.Errorf("window %s: [%v, %v) is beyond the series' span %v", s.label(), start, start+length, s.Span())
	}
	i, n := int(start/s.Step), int(length/s.Step)
	return Series{Name: s.Name, Step: s.Step, Values: append([]float64(nil), s.Values[i:i+n]...)}, nil
}

// Concat joins series of equal step end to end under a new name.
func Concat(name string, parts ...Series) (Series, error) {
	if len(parts) == 0 {
		return Series{}, fmt.Errorf("concat %s: no series", name)
	}
	out := Series{Name: name, Step: parts[0].Step}
	for i, p := range parts {
		if p.Step != out.Step {
			return Series{}, fmt.Errorf("concat %s: part %d (%s) has step %v, part 0 has %v", name, i, p.label(), p.Step, out.Step)
		}
		out.Values = append(out.Values, p.Values...)
	}
	return out, out.Validate()
}
