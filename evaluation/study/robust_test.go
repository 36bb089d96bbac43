package study

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIQMKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"eight: ranks 3 to 6", []float64{8, 1, 7, 2, 6, 3, 5, 4}, 4.5},
		{"five: one cut from each end (scipy trim_mean)", []float64{1, 2, 3, 4, 100}, 3},
		{"three: nothing cut", []float64{1, 2, 9}, 4},
		{"one", []float64{7}, 7},
		{"an outlier does not move it", []float64{1, 2, 3, 4, 5, 6, 7, 1e9}, 4.5},
	} {
		assert.InDelta(t, tc.want, IQM(tc.xs), 1e-12, tc.name)
	}
	// Weights are multiplicities: {1×3, 2×1} is {1, 1, 1, 2}.
	assert.InDelta(t, 1.0, WeightedIQM([]float64{2, 1}, []float64{1, 3}), 1e-12)
	assert.InDelta(t, IQM([]float64{1, 1, 5, 5, 5, 9, 9, 9}), WeightedIQM([]float64{9, 1, 5}, []float64{3, 2, 3}), 1e-12)
	assert.True(t, math.IsNaN(WeightedIQM([]float64{1}, []float64{0})))
	assert.InDelta(t, 1.75, WeightedMean([]float64{1, 4}, []float64{3, 1}), 1e-12)
}

// TestCrossedCoverage draws many datasets of 20 applications × 5 seeds
// whose figures share a strong per-application effect, and counts how
// often each interval holds the true mean: resampling applications covers
// it about 95 % of the time, resampling the 100 units as independent (what
// the studies did) far less.
func TestCrossedCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	b := Bootstrap{Level: 0.95, Resamples: 400, Seed: 3}
	const datasets, apps, seeds = 200, 20, 5
	byApp, byUnit := 0, 0
	for d := range datasets {
		var clustered, independent []Unit
		for a := range apps {
			effect := r.NormFloat64()
			for s := range seeds {
				v := effect + 0.3*r.NormFloat64()
				app := fmt.Sprintf("app-%d", a)
				clustered = append(clustered, Unit{Value: v, Groups: []string{app}})
				independent = append(independent, Unit{Value: v, Groups: []string{fmt.Sprintf("%s/%d", app, s)}})
			}
		}
		b.Seed = uint64(d) + 1
		e, err := b.Crossed(clustered, WeightedMean)
		require.NoError(t, err)
		if e.Lo <= 0 && 0 <= e.Hi {
			byApp++
		}
		e, err = b.Crossed(independent, WeightedMean)
		require.NoError(t, err)
		if e.Lo <= 0 && 0 <= e.Hi {
			byUnit++
		}
	}
	cover := func(n int) float64 { return float64(n) / datasets }
	t.Logf("coverage of the 95 %% intervals over %d datasets: applications resampled %.3f, units resampled %.3f", datasets, cover(byApp), cover(byUnit))
	assert.InDelta(t, 0.935, cover(byApp), 0.03, "applications resampled: near the nominal 95 % (percentile intervals over 20 clusters run a little short)")
	assert.Less(t, cover(byUnit), 0.75, "units resampled as independent: too narrow")
}

func TestCrossedTwoFactorsAndErrors(t *testing.T) {
	b := DefaultBootstrap()
	// Every application under each of 3 meta-training runs: a run's
	// effect is shared across applications, so redrawing the runs widens
	// the interval beyond redrawing the applications alone.
	r := rand.New(rand.NewPCG(1, 2))
	runEffect := []float64{-2, 0, 2}
	var apps, both []Unit
	for a := range 30 {
		e := 0.2 * r.NormFloat64()
		for m, re := range runEffect {
			v := e + re + 0.1*r.NormFloat64()
			app, run := fmt.Sprint("app-", a), fmt.Sprint("meta-", m)
			apps = append(apps, Unit{Value: v, Groups: []string{app}})
			both = append(both, Unit{Value: v, Groups: []string{app, run}})
		}
	}
	ea, err := b.Crossed(apps, WeightedMean)
	require.NoError(t, err)
	eb, err := b.Crossed(both, WeightedMean)
	require.NoError(t, err)
	assert.InDelta(t, ea.Value, eb.Value, 1e-12)
	assert.Greater(t, eb.Hi-eb.Lo, 5*(ea.Hi-ea.Lo), "3 meta runs are 3 draws, not 90")
	assert.Equal(t, []int{30, 3}, Levels(both))

	again, err := b.Crossed(both, WeightedMean)
	require.NoError(t, err)
	assert.Equal(t, eb, again, "seeded")
	iqm, err := b.Crossed(both, WeightedIQM)
	require.NoError(t, err)
	assert.InDelta(t, IQM(values(both)), iqm.Value, 1e-12)

	_, err = b.Crossed(nil, WeightedMean)
	assert.ErrorIs(t, err, ErrNoData)
	_, err = b.Crossed([]Unit{{Value: 1}}, WeightedMean)
	assert.ErrorContains(t, err, "units without a factor")
	_, err = b.Crossed([]Unit{{Value: 1, Groups: []string{"a"}}, {Value: 2, Groups: []string{"b", "c"}}}, WeightedMean)
	assert.ErrorContains(t, err, "unit 1 has 2 factors, unit 0 has 1")
	_, err = b.Crossed([]Unit{{Value: math.NaN(), Groups: []string{"a"}}}, WeightedMean)
	assert.ErrorContains(t, err, "observation 0 is NaN")
	_, err = Bootstrap{Level: 2, Resamples: 100}.Crossed(both, WeightedMean)
	assert.ErrorContains(t, err, "level 2")
}

// TestCrossedMergesAliasedFactors: two factors that split the units
// alike (each test its own source policy and its own meta-training run)
// are one draw: the interval is the one factor's, not NaN from the
// replicates where the two draws miss each other; a factor that splits
// them differently is kept.
func TestCrossedMergesAliasedFactors(t *testing.T) {
	b := DefaultBootstrap()
	var one, aliased, crossed []Unit
	for test := range 3 {
		for a := range 4 {
			v := float64(test) + 0.1*float64(a)
			app := fmt.Sprint("app-", a+4*test)
			one = append(one, Unit{Value: v, Groups: []string{app, fmt.Sprint("test-", test)}})
			aliased = append(aliased, Unit{Value: v, Groups: []string{app, fmt.Sprint("source-", test), fmt.Sprint("meta-", 2-test)}})
			crossed = append(crossed, Unit{Value: v, Groups: []string{app, fmt.Sprint("source-", test), fmt.Sprint("meta-", a%2)}})
		}
	}
	e1, err := b.Crossed(one, WeightedMean)
	require.NoError(t, err)
	require.False(t, math.IsNaN(e1.Lo))
	e2, err := b.Crossed(aliased, WeightedMean)
	require.NoError(t, err)
	assert.Equal(t, e1, e2)
	e3, err := b.Crossed(crossed, WeightedMean)
	require.NoError(t, err)
	assert.NotEqual(t, e1, e3, "a factor of its own is redrawn")
	assert.True(t, samePartition([]int{0, 0, 1, 2}, []int{2, 2, 0, 1}, 3))
	assert.False(t, samePartition([]int{0, 0, 1, 1}, []int{0, 1, 1, 0}, 2))
	assert.False(t, samePartition([]int{0, 1, 1, 1}, []int{0, 0, 1, 1}, 2))
}

func values(us []Unit) []float64 {
	out := make([]float64, len(us))
	for i, u := range us {
		out[i] = u.Value
	}
	return out
}

func TestImprovementKnownAnswers(t *testing.T) {
	// Pairs (3,1) win, (3,4) loss, (4,1) win, (4,4) tie: 2.5 of 4.
	p, err := Improvement(map[string][]float64{"a": {3, 4}}, map[string][]float64{"a": {1, 4}})
	require.NoError(t, err)
	assert.InDelta(t, 0.625, p, 1e-12)
	// Averaged over tasks, not over pairs: task b is lost outright.
	p, err = Improvement(map[string][]float64{"a": {3, 4}, "b": {1}}, map[string][]float64{"a": {1, 4}, "b": {2, 3, 4}})
	require.NoError(t, err)
	assert.InDelta(t, 0.3125, p, 1e-12)

	// Two arms drawn alike: one half, with an interval around it.
	r := rand.New(rand.NewPCG(5, 6))
	xs, ys := map[string][]float64{}, map[string][]float64{}
	for a := range 20 {
		task := fmt.Sprint("app-", a)
		for range 3 {
			xs[task] = append(xs[task], r.NormFloat64())
			ys[task] = append(ys[task], r.NormFloat64())
		}
	}
	e, err := DefaultBootstrap().ImprovementInterval(xs, ys)
	require.NoError(t, err)
	assert.Less(t, e.Lo, 0.5)
	assert.Greater(t, e.Hi, 0.5)
	assert.Equal(t, 20, e.N)
	for task := range xs {
		for i := range xs[task] {
			xs[task][i] += 3
		}
	}
	e, err = DefaultBootstrap().ImprovementInterval(xs, ys)
	require.NoError(t, err)
	assert.Greater(t, e.Lo, 0.9, "an arm 3 standard deviations better nearly always wins")

	_, err = Improvement(map[string][]float64{"a": {1}}, map[string][]float64{"a": {1}, "b": {2}})
	assert.ErrorContains(t, err, "over 1 and 2 tasks")
	_, err = Improvement(map[string][]float64{"a": {}}, map[string][]float64{"a": {1}})
	assert.ErrorContains(t, err, `task "a" has 0 and 1 runs`)
	_, err = Improvement(map[string][]float64{"a": {math.NaN()}}, map[string][]float64{"a": {1}})
	assert.ErrorContains(t, err, "NaN")
	_, err = DefaultBootstrap().ImprovementInterval(map[string][]float64{"a": {1}}, map[string][]float64{"b": {1}})
	assert.ErrorContains(t, err, `task "a" of the first arm is not the second's`)
	_, err = Improvement(nil, nil)
	assert.ErrorIs(t, err, ErrNoData)
}

// TestKaplanMeierKnownAnswer is the 6-MP arm of Freireich et al. (1963),
// the textbook example (Kalbfleisch & Prentice; Klein & Moeschberger
// Table 4.1A): 21 patients, times of remission in weeks, + censored.
func TestKaplanMeierKnownAnswer(t *testing.T) {
	times := []float64{6, 6, 6, 6, 7, 9, 10, 10, 11, 13, 16, 17, 19, 20, 22, 23, 25, 32, 32, 34, 35}
	censored := map[int]bool{3: true, 5: true, 7: true, 8: true, 11: true, 12: true, 13: true, 16: true, 17: true, 18: true, 19: true, 20: true}
	observed := make([]bool, len(times))
	for i := range observed {
		observed[i] = !censored[i]
	}
	km, err := KaplanMeier(times, observed)
	require.NoError(t, err)
	want := map[float64]float64{6: 18.0 / 21, 7: 18.0 / 21 * 16 / 17}
	want[10] = want[7] * 14 / 15
	want[13] = want[10] * 11 / 12
	want[16] = want[13] * 10 / 11
	want[22] = want[16] * 6 / 7
	want[23] = want[22] * 5 / 6
	for _, st := range km {
		if w, ok := want[st.Time]; ok {
			assert.InDelta(t, w, st.Survival, 1e-12, "S(%g)", st.Time)
		}
	}
	assert.InDelta(t, 0.4482, km[len(km)-1].Survival, 1e-4, "the published S(23) = 0.448 holds to the end")
	first := km[0]
	assert.Equal(t, KMStep{Time: 6, AtRisk: 21, Events: 3, Censored: 1}, KMStep{Time: first.Time, AtRisk: first.AtRisk, Events: first.Events, Censored: first.Censored})
	assert.Equal(t, KMStep{Time: 7, AtRisk: 17, Events: 1}, KMStep{Time: km[1].Time, AtRisk: km[1].AtRisk, Events: km[1].Events, Censored: km[1].Censored}, "the one censored at 6 is not at risk at 7")
	assert.Equal(t, 23.0, MedianTime(km))

	// The restricted mean to 35 weeks, the area under the steps by hand.
	rm, err := RestrictedMean(km, 35)
	require.NoError(t, err)
	hand := 6*1 + 1*want[6] + 3*want[7] + 3*want[10] + 3*want[13] + 6*want[16] + 1*want[22] + 12*want[23]
	assert.InDelta(t, hand, rm, 1e-9)
	rm, err = RestrictedMean(km, 5)
	require.NoError(t, err)
	assert.InDelta(t, 5, rm, 1e-12, "before any event everyone waits")

	// Nothing censored: the restricted mean past the last time is the mean.
	km, err = KaplanMeier([]float64{3, 1, 2}, []bool{true, true, true})
	require.NoError(t, err)
	rm, err = RestrictedMean(km, 10)
	require.NoError(t, err)
	assert.InDelta(t, 2, rm, 1e-12)
	// Most censored at the budget: no median.
	km, err = KaplanMeier([]float64{10, 60, 60, 60}, []bool{true, false, false, false})
	require.NoError(t, err)
	assert.True(t, math.IsNaN(MedianTime(km)))

	_, err = KaplanMeier([]float64{1}, []bool{true, false})
	assert.ErrorContains(t, err, "1 times and 2 event flags")
	_, err = KaplanMeier([]float64{-1}, []bool{true})
	assert.ErrorContains(t, err, "time 0 is -1")
	_, err = KaplanMeier(nil, nil)
	assert.ErrorIs(t, err, ErrNoData)
	_, err = RestrictedMean(km, 0)
	assert.ErrorContains(t, err, "tau must be positive")
}

func TestPairedHeadline(t *testing.T) {
	b := DefaultBootstrap()
	// Two applications, each under 3 tests: the numerator's arm needs
	// twice the episodes on app-a and as many on app-b.
	num := []float64{20, 22, 18, 10, 12, 8}
	den := []float64{10, 11, 9, 10, 12, 8}
	groups := [][]string{{"app-a"}, {"app-a"}, {"app-a"}, {"app-b"}, {"app-b"}, {"app-b"}}
	h, err := b.PairedHeadline("adaptation", "episodes, TL / AWARE", num, den, groups, 5.5)
	require.NoError(t, err)
	assert.InDelta(t, 90.0/60, h.Ours.Value, 1e-12)
	assert.InDelta(t, 0.5*(1+0.5), h.Improvement.Value, 1e-12, "app-a: every unit's TL above its AWARE (1), app-b: ties (0.5)")
	assert.Equal(t, 2, h.Improvement.N, "tasks are applications")
	// With 2 applications the interval spans what either gives alone
	// (ratio 1 or 2); units resampled as independent would narrow it.
	assert.LessOrEqual(t, h.Ours.Lo, 1.0+1e-12)
	assert.GreaterOrEqual(t, h.Ours.Hi, 2.0-1e-12)
	indep, err := b.PairedHeadline("adaptation", "x", num, den, nil, 5.5)
	require.NoError(t, err)
	assert.InDelta(t, h.Ours.Value, indep.Ours.Value, 1e-12)
	assert.Greater(t, indep.Ours.Lo, h.Ours.Lo, "independent units: a narrower interval")
	assert.Equal(t, 6, indep.Improvement.N)

	// A paper's ratio below 1: the paper's side is the complement.
	below := Headline{Paper: 0.5, Improvement: Estimate{Value: 0.3, Lo: 0.1, Hi: 0.4, N: 5}}
	assert.Equal(t, Estimate{Value: 0.7, Lo: 0.6, Hi: 0.9, N: 5}, roundEst(below.PaperSide()))
	above := Headline{Paper: 2, Improvement: Estimate{Value: 0.3, Lo: 0.1, Hi: 0.4, N: 5}}
	assert.Equal(t, above.Improvement, above.PaperSide())

	zero, err := b.PairedHeadline("s", "f", []float64{1, 2}, []float64{0, 0}, nil, 2)
	require.NoError(t, err, "a ratio over a zero mean is not measured, not an error")
	assert.Equal(t, "not measured", zero.Verdict())
	_, err = b.PairedHeadline("s", "f", []float64{1, 2}, []float64{1, 2}, [][]string{{"a"}}, 2)
	assert.ErrorContains(t, err, "study: s, f: study: paired ratio of 2 units with 1 groups", "a wiring error is not hidden as not measured")

	// Paired, not every unit against every unit: within app-c each
	// unit's numerator beats its own denominator, though not the other
	// unit's.
	p, err := b.PairedImprovement([]float64{2, 11}, []float64{1, 10}, [][]string{{"app-c"}, {"app-c"}})
	require.NoError(t, err)
	assert.InDelta(t, 1.0, p.Value, 1e-12)

	// A denominator whose replicates can sum to zero: the ratio's upper
	// tail is infinite, not cut off.
	inf, err := b.PairedRatio([]float64{1, 1, 1}, []float64{0, 0, 3}, nil)
	require.NoError(t, err)
	assert.InDelta(t, 1.0, inf.Value, 1e-12)
	assert.True(t, math.IsInf(inf.Hi, 1), "hi %g", inf.Hi)
	_, err = b.PairedRatio([]float64{1}, []float64{1, 2}, nil)
	assert.ErrorContains(t, err, "paired ratio of 1 and 2 observations")
	_, err = b.PairedRatio([]float64{1, 2}, []float64{1, 2}, [][]string{{"a"}})
	assert.ErrorContains(t, err, "2 units with 1 groups")
	_, err = b.PairedImprovement([]float64{1, 2}, []float64{1, 2}, [][]string{{"a"}, {}})
	assert.ErrorContains(t, err, "unit 1 has no factor")
}

func roundEst(e Estimate) Estimate {
	r := func(v float64) float64 { return math.Round(v*1e9) / 1e9 }
	return Estimate{Value: r(e.Value), Lo: r(e.Lo), Hi: r(e.Hi), N: e.N, Level: e.Level}
}
