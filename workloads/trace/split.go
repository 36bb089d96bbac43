package trace

import (
	"fmt"
	"time"
)

// Split is a trace's busiest and quietest windows of one length, for the
// "load high ↔ low" instability scenario.
type Split struct {
	// High is the window of the given length with the highest mean (the
	// maximum of the rolling mean of that width); HighStart is where it
	// starts in the original series.
	High      Series
	HighStart time.Duration
	// Low is the window with the lowest mean among those that do not
	// overlap High; LowStart is where it starts.
	Low      Series
	LowStart time.Duration
}

// SplitHighLow finds the highest-load and lowest-load non-overlapping
// windows of length (a positive multiple of s.Step) in s. Among equal means
// the earliest window wins. It is an error if s is shorter than two windows.
func SplitHighLow(s Series, length time.Duration) (Split, error) {
	if err := s.Validate(); err != nil {
		return Split{}, err
	}
	if length <= 0 || length%s.Step != 0 {
		return Split{}, fmt.Errorf("split %s: window %v is not a positive multiple of the step %v", s.label(), length, s.Step)
	}
	w := int(length / s.Step)
	if 2*w > len(s.Values) {
		return Split{}, fmt.Errorf("split %s: spans %v, shorter than two windows of %v", s.label(), s.Span(), length)
	}
	// sums[i] is the total of the window starting at step i.
	sums := make([]float64, len(s.Values)-w+1)
	var run float64
	for i, v := range s.Values {
		run += v
		if i >= w {
			run -= s.Values[i-w]
		}
		if i >= w-1 {
			sums[i-w+1] = run
		}
	}
	// The running sum drifts by rounding when values are not whole numbers:
	// differences within tol count as ties.
	tol := 1e-9 * (s.Total() + 1)
	hi := 0
	for i, v := range sums {
		if v > sums[hi]+tol {
			hi = i
		}
	}
	lo := -1
	for i, v := range sums {
		if i+w > hi && i < hi+w {
			continue // overlaps High
		}
		if lo < 0 || v < sums[lo]-tol {
			lo = i
		}
	}
	win := func(i int, tag string) Series {
		return Series{Name: fmt.Sprintf("%s[%s %v+%v]", s.Name, tag, time.Duration(i)*s.Step, length), Step: s.Step,
			Values: append([]float64(nil), s.Values[i:i+w]...)}
	}
	return Split{
		High: win(hi, "high"), HighStart: time.Duration(hi) * s.Step,
		Low: win(lo, "low"), LowStart: time.Duration(lo) * s.Step,
	}, nil
}

// HighToLow returns s's busiest window of length followed by its quietest
// non-overlapping one (see SplitHighLow): a sudden drop in load.
func HighToLow(s Series, length time.Duration) (Series, error) {
	sp, err := SplitHighLow(s, length)
	if err != nil {
		return Series{}, err
	}
	return Concat(s.Name+"[high→low]", sp.High, sp.Low)
}

// LowToHigh returns s's quietest window of length followed by its busiest
// one (see SplitHighLow): a sudden surge in load.
func LowToHigh(s Series, length time.Duration) (Series, error) {
	sp, err := SplitHighLow(s, length)
	if err != nil {
		return Series{}, err
	}
	return Concat(s.Name+"[low→high]", sp.Low, sp.High)
}
