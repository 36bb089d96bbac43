package study

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// KMStep is one step of a Kaplan–Meier curve: at Time, Events units saw
// the event (an arm converged) among AtRisk still waiting, and Censored
// left unseen (the budget ended first); Survival is the estimated share
// still waiting just after Time.
type KMStep struct {
	Time     float64 `json:"time"`
	AtRisk   int     `json:"atRisk"`
	Events   int     `json:"events"`
	Censored int     `json:"censored"`
	Survival float64 `json:"survival"`
}

// KaplanMeier is the product-limit estimate of the time to an event from
// times where observed[i] says whether unit i's event was seen at
// times[i] or the unit was censored there (it had not happened by then).
// A unit censored at a time where others see the event counts at risk at
// that time, the usual convention. Steps are in time order, one per
// distinct time.
func KaplanMeier(times []float64, observed []bool) ([]KMStep, error) {
	if len(times) == 0 {
		return nil, ErrNoData
	}
	if len(times) != len(observed) {
		return nil, fmt.Errorf("study: kaplan-meier: %d times and %d event flags", len(times), len(observed))
	}
	idx := make([]int, len(times))
	for i := range idx {
		if math.IsNaN(times[i]) || times[i] < 0 {
			return nil, fmt.Errorf("study: kaplan-meier: time %d is %g: want a non-negative number", i, times[i])
		}
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return times[idx[a]] < times[idx[b]] })
	var steps []KMStep
	atRisk, s := len(times), 1.0
	for k := 0; k < len(idx); {
		t := times[idx[k]]
		st := KMStep{Time: t, AtRisk: atRisk}
		for ; k < len(idx) && times[idx[k]] == t; k++ {
			if observed[idx[k]] {
				st.Events++
			} else {
				st.Censored++
			}
		}
		s *= 1 - float64(st.Events)/float64(atRisk)
		st.Survival = s
		atRisk -= st.Events + st.Censored
		steps = append(steps, st)
	}
	return steps, nil
}

// RestrictedMean is the area under the Kaplan–Meier curve from 0 to tau:
// the mean time to the event with every time capped at tau (the
// restricted mean survival time), which stays defined when many units are
// censored, unlike the mean or even the median.
func RestrictedMean(steps []KMStep, tau float64) (float64, error) {
	if len(steps) == 0 {
		return 0, ErrNoData
	}
	if !(tau > 0) {
		return 0, errors.New("study: restricted mean: tau must be positive")
	}
	area, prevT, s := 0.0, 0.0, 1.0
	for _, st := range steps {
		if st.Time >= tau {
			break
		}
		area += s * (st.Time - prevT)
		prevT, s = st.Time, st.Survival
	}
	return area + s*(tau-prevT), nil
}

// MedianTime is the first time where the curve falls to one half or
// below; NaN when it never does (more than half the units censored).
func MedianTime(steps []KMStep) float64 {
	for _, st := range steps {
		if st.Survival <= 0.5 {
			return st.Time
		}
	}
	return math.NaN()
}
