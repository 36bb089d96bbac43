package study

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// This file holds the statistics a reviewer of RL-for-systems figures now
// expects beside the mean (Agarwal et al., "Deep RL at the edge of the
// statistical precipice", NeurIPS 2021): the interquartile mean, intervals
// from a bootstrap that redraws what was drawn (applications, seeds,
// meta-training runs, source pairs) rather than treating units as
// independent, and the probability of improvement.

// Unit is one observation and the random draws it shares with others.
type Unit struct {
	Value float64
	// Groups names the observation's level of each random factor it was
	// drawn under, one per factor in the same order for every unit: e.g.
	// {application, seed} or {application, meta-training seed}. A unit
	// that shares no draw has one factor, its own name.
	Groups []string
}

// Stat is a statistic of a weighted sample: values[i] counted weights[i]
// times (weights are whole numbers, a bootstrap's multiplicities).
type Stat func(values, weights []float64) float64

// WeightedMean is the mean of the weighted sample.
func WeightedMean(values, weights []float64) float64 {
	var s, w float64
	for i, v := range values {
		s += v * weights[i]
		w += weights[i]
	}
	if w == 0 {
		return math.NaN()
	}
	return s / w
}

// WeightedIQM is the interquartile mean of the weighted sample: the mean
// of the values left when the lowest and the highest quarter of the
// observations are cut (floor(n/4) from each end, n the total weight,
// as scipy.stats.trim_mean(x, 0.25) and rliable compute it).
func WeightedIQM(values, weights []float64) float64 {
	idx := make([]int, len(values))
	n := 0.0
	for i := range idx {
		idx[i] = i
		n += weights[i]
	}
	if n == 0 {
		return math.NaN()
	}
	sort.SliceStable(idx, func(a, b int) bool { return values[idx[a]] < values[idx[b]] })
	cut := math.Floor(n / 4)
	lo, hi := cut, n-cut // keep ranks [lo, hi)
	var s, kept, rank float64
	for _, i := range idx {
		w := weights[i]
		// This value holds ranks [rank, rank+w).
		in := math.Min(rank+w, hi) - math.Max(rank, lo)
		if in > 0 {
			s += values[i] * in
			kept += in
		}
		rank += w
	}
	return s / kept
}

// IQM is the interquartile mean of xs (WeightedIQM, every weight 1).
func IQM(xs []float64) float64 {
	w := make([]float64, len(xs))
	for i := range w {
		w[i] = 1
	}
	return WeightedIQM(xs, w)
}

// Crossed is stat over units with its bootstrap interval, each replicate
// redrawing the levels of every random factor with replacement,
// independently (the pigeonhole bootstrap for crossed factors, Owen 2007;
// for one factor, the cluster bootstrap): a unit enters a replicate as
// often as the product of its levels' draws. Units that share an
// application, or a meta-training run, therefore move together, and the
// interval is as wide as the number of applications (or runs) warrants,
// not the number of units. A factor with one level (one training seed,
// one meta-training run) adds no variance: the interval is then
// conditional on that draw (Levels says how many each factor has). A
// replicate that draws no unit is skipped; if more than the interval's
// tail (1 − Level) are, the interval is NaN. Two factors that split the
// units alike (each test its own source policy and its own meta-training
// run, say) are one draw and are redrawn once.
func (b Bootstrap) Crossed(units []Unit, stat Stat) (Estimate, error) {
	if len(units) == 0 {
		return Estimate{}, ErrNoData
	}
	values := make([]float64, len(units))
	groups := make([][]string, len(units))
	for i, u := range units {
		if math.IsNaN(u.Value) {
			return Estimate{}, fmt.Errorf("study: observation %d is NaN", i)
		}
		values[i], groups[i] = u.Value, u.Groups
	}
	return b.crossed(groups, func(w []float64) float64 { return stat(values, w) }, 0xC055)
}

// crossed is the crossed bootstrap of stat, a statistic of the units'
// weights, over the units' groups.
func (b Bootstrap) crossed(groups [][]string, stat func(weights []float64) float64, salt uint64) (Estimate, error) {
	if err := b.validate(); err != nil {
		return Estimate{}, err
	}
	n := len(groups)
	if n == 0 {
		return Estimate{}, ErrNoData
	}
	factors := len(groups[0])
	if factors == 0 {
		return Estimate{}, errors.New("study: units without a factor: give each unit at least its own name")
	}
	level := make([][]int, factors) // level[f][i]: unit i's level of factor f
	levels := make([]int, factors)  // number of levels of factor f
	for f := range factors {
		level[f] = make([]int, n)
		index := map[string]int{}
		for i, g := range groups {
			if len(g) != factors {
				return Estimate{}, fmt.Errorf("study: unit %d has %d factors, unit 0 has %d", i, len(g), factors)
			}
			k, ok := index[g[f]]
			if !ok {
				k = len(index)
				index[g[f]] = k
			}
			level[f][i] = k
		}
		levels[f] = len(index)
	}
	level, levels = distinctFactors(level, levels)
	factors = len(level)
	weights := make([]float64, n)
	for i := range weights {
		weights[i] = 1
	}
	e := Estimate{Value: stat(weights), N: n, Level: b.Level}
	r := b.rand(salt)
	draws := make([][]float64, factors)
	for f := range draws {
		draws[f] = make([]float64, levels[f])
	}
	stats := make([]float64, 0, b.Resamples)
	for range b.Resamples {
		for f := range draws {
			clear(draws[f])
			for range levels[f] {
				draws[f][r.IntN(levels[f])]++
			}
		}
		total := 0.0
		for i := range weights {
			w := 1.0
			for f := range factors {
				w *= draws[f][level[f][i]]
			}
			weights[i] = w
			total += w
		}
		if total == 0 {
			continue // no unit drawn: no statistic
		}
		if v := stat(weights); !math.IsNaN(v) {
			stats = append(stats, v) // ±Inf kept: a ratio over a zero sum is in a tail
		}
	}
	// Replicates without a statistic (no unit drawn, 0/0) condition the
	// interval on what was drawn: more than the interval's tail of them
	// and there is no interval.
	if float64(b.Resamples-len(stats)) > (1-b.Level)*float64(b.Resamples) {
		e.Lo, e.Hi = math.NaN(), math.NaN()
		return e, nil
	}
	e.Lo, e.Hi = b.interval(stats)
	return e, nil
}

// distinctFactors drops every factor that partitions the units as an
// earlier one does (its levels in one-to-one correspondence with that
// factor's): two names for one draw, which crossing would redraw twice
// and so drop every unit from the replicates in which the two draws miss
// each other.
func distinctFactors(level [][]int, levels []int) ([][]int, []int) {
	var outL [][]int
	var outN []int
	for f, lf := range level {
		dup := false
		for k, lk := range outL {
			if outN[k] == levels[f] && samePartition(lk, lf, levels[f]) {
				dup = true
				break
			}
		}
		if !dup {
			outL, outN = append(outL, lf), append(outN, levels[f])
		}
	}
	return outL, outN
}

// samePartition says whether two labellings of the units (n levels
// each) group them alike.
func samePartition(a, b []int, n int) bool {
	ab, ba := make([]int, n), make([]int, n)
	for i := range ab {
		ab[i], ba[i] = -1, -1
	}
	for i := range a {
		switch {
		case ab[a[i]] < 0 && ba[b[i]] < 0:
			ab[a[i]], ba[b[i]] = b[i], a[i]
		case ab[a[i]] != b[i] || ba[b[i]] != a[i]:
			return false
		}
	}
	return true
}

// PairedRatio is mean(num)/mean(den) over paired units (num[i] and den[i]
// from unit i, e.g. TL's and AWARE's episodes on one application and
// test) with its interval from the crossed bootstrap over the units'
// groups (groups[i] as Unit.Groups; nil: every unit its own draw).
func (b Bootstrap) PairedRatio(num, den []float64, groups [][]string) (Estimate, error) {
	if len(num) == 0 || len(den) == 0 {
		return Estimate{}, ErrNoData
	}
	if len(num) != len(den) {
		return Estimate{}, fmt.Errorf("study: paired ratio of %d and %d observations", len(num), len(den))
	}
	for _, xs := range [][]float64{num, den} {
		if i := slices.IndexFunc(xs, math.IsNaN); i >= 0 {
			return Estimate{}, fmt.Errorf("study: observation %d is NaN", i)
		}
	}
	if groups == nil {
		groups = ownGroups(len(num))
	}
	if len(groups) != len(num) {
		return Estimate{}, fmt.Errorf("study: paired ratio of %d units with %d groups", len(num), len(groups))
	}
	if mean(den) == 0 {
		return Estimate{}, ErrZeroMean
	}
	return b.crossed(groups, func(w []float64) float64 {
		var sn, sd float64
		for i, wi := range w {
			sn += wi * num[i]
			sd += wi * den[i]
		}
		return sn / sd // ±Inf over a zero sum, NaN for 0/0
	}, 0x4A7)
}

// ErrZeroMean is the error of a ratio over a zero mean: not measured.
var ErrZeroMean = errors.New("study: ratio over a zero mean")

// ownGroups gives each of n units its own level.
func ownGroups(n int) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = []string{fmt.Sprint("unit-", i)}
	}
	return out
}

// PairedImprovement is the probability that a unit's num exceeds its
// own den (ties half), averaged within each application (the units'
// first factor, groups[i][0]; nil: every unit its own) and then over
// applications: Agarwal et al.'s probability of improvement with each
// unit's pair compared, not every unit of one arm against every unit of
// the other (a study's units of one application are different
// conditions, not exchangeable runs). Its interval redraws the
// applications, then the units within each.
func (b Bootstrap) PairedImprovement(num, den []float64, groups [][]string) (Estimate, error) {
	if err := b.validate(); err != nil {
		return Estimate{}, err
	}
	if len(num) == 0 {
		return Estimate{}, ErrNoData
	}
	if len(num) != len(den) {
		return Estimate{}, fmt.Errorf("study: improvement of %d and %d observations", len(num), len(den))
	}
	if groups == nil {
		groups = ownGroups(len(num))
	}
	if len(groups) != len(num) {
		return Estimate{}, fmt.Errorf("study: improvement of %d units with %d groups", len(num), len(groups))
	}
	byTask := map[string][]float64{} // the units' indicators per application
	for i, g := range groups {
		if len(g) == 0 {
			return Estimate{}, fmt.Errorf("study: unit %d has no factor", i)
		}
		a, d := num[i], den[i]
		var w float64
		switch {
		case math.IsNaN(a) || math.IsNaN(d):
			return Estimate{}, fmt.Errorf("study: improvement: unit %d holds a NaN", i)
		case a > d:
			w = 1
		case a == d:
			w = 0.5
		}
		byTask[g[0]] = append(byTask[g[0]], w)
	}
	tasks := make([]string, 0, len(byTask))
	for t := range byTask {
		tasks = append(tasks, t)
	}
	slices.Sort(tasks)
	value := 0.0
	for _, t := range tasks {
		value += mean(byTask[t])
	}
	value /= float64(len(tasks))
	r := b.rand(0x1A9)
	stats := make([]float64, b.Resamples)
	for k := range stats {
		sum := 0.0
		for range tasks {
			sum += mean(redraw(r.IntN, byTask[tasks[r.IntN(len(tasks))]]))
		}
		stats[k] = sum / float64(len(tasks))
	}
	lo, hi := b.interval(stats)
	return Estimate{Value: value, Lo: lo, Hi: hi, N: len(tasks), Level: b.Level}, nil
}

// Levels counts the distinct levels of each factor of units: what an
// interval from Crossed rests on (e.g. 200 applications, 1 meta seed).
func Levels(units []Unit) []int {
	if len(units) == 0 {
		return nil
	}
	out := make([]int, len(units[0].Groups))
	for f := range out {
		seen := map[string]bool{}
		for _, u := range units {
			if f < len(u.Groups) {
				seen[u.Groups[f]] = true
			}
		}
		out[f] = len(seen)
	}
	return out
}

// Improvement is the probability that a run of arm X beats a run of arm
// Y on the same task, averaged over tasks (rliable's probability of
// improvement): within a task, the share of (x, y) pairs with x > y,
// counting ties half (the Mann–Whitney U over the pairs).
// xs and ys map each task (an application, a scenario) to the arms'
// figures there; both must hold the same tasks. Higher is better; for a
// figure where lower is better (SLO violations, episodes to converge)
// swap the arms' roles or negate the figures.
func Improvement(xs, ys map[string][]float64) (float64, error) {
	if len(xs) == 0 {
		return 0, ErrNoData
	}
	if len(xs) != len(ys) {
		return 0, fmt.Errorf("study: improvement over %d and %d tasks", len(xs), len(ys))
	}
	tasks := make([]string, 0, len(xs))
	for t := range xs {
		tasks = append(tasks, t)
	}
	slices.Sort(tasks)
	sum := 0.0
	for _, t := range tasks {
		x, y := xs[t], ys[t]
		if _, ok := ys[t]; !ok {
			return 0, fmt.Errorf("study: improvement: task %q of the first arm is not the second's", t)
		}
		if len(x) == 0 || len(y) == 0 {
			return 0, fmt.Errorf("study: improvement: task %q has %d and %d runs", t, len(x), len(y))
		}
		wins := 0.0
		for _, a := range x {
			for _, b := range y {
				switch {
				case math.IsNaN(a) || math.IsNaN(b):
					return 0, fmt.Errorf("study: improvement: task %q holds a NaN", t)
				case a > b:
					wins++
				case a == b:
					wins += 0.5
				}
			}
		}
		sum += wins / float64(len(x)*len(y))
	}
	return sum / float64(len(tasks)), nil
}

// ImprovementInterval is Improvement with its bootstrap interval, each
// replicate redrawing the tasks (they are a draw from the pool), and
// within each drawn task each arm's runs.
func (b Bootstrap) ImprovementInterval(xs, ys map[string][]float64) (Estimate, error) {
	if err := b.validate(); err != nil {
		return Estimate{}, err
	}
	v, err := Improvement(xs, ys)
	if err != nil {
		return Estimate{}, err
	}
	tasks := make([]string, 0, len(xs))
	for t := range xs {
		tasks = append(tasks, t)
	}
	slices.Sort(tasks)
	r := b.rand(0x1A9)
	stats := make([]float64, b.Resamples)
	for k := range stats {
		rx, ry := map[string][]float64{}, map[string][]float64{}
		for j := range tasks {
			t := tasks[r.IntN(len(tasks))]
			name := fmt.Sprint(j) // a task drawn twice counts twice
			rx[name] = redraw(r.IntN, xs[t])
			ry[name] = redraw(r.IntN, ys[t])
		}
		stats[k], _ = Improvement(rx, ry)
	}
	lo, hi := b.interval(stats)
	return Estimate{Value: v, Lo: lo, Hi: hi, N: len(tasks), Level: b.Level}, nil
}

func redraw(intN func(int) int, xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i := range out {
		out[i] = xs[intN(len(xs))]
	}
	return out
}
