package shipped

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/trace"
)

// sharedFile returns the path of name in the project's traces folder
// (../shared/traces from the module root), or skips the test, saying what
// goes unchecked, when the file is absent (a fresh clone has no ../shared).
func sharedFile(t *testing.T, name, unchecked string) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			t.Skip("module root (go.mod) not found; cannot locate ../shared/traces")
		}
		dir = filepath.Dir(dir)
	}
	p := filepath.Join(dir, "..", "shared", "traces", name)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s is absent (a fresh clone has no ../shared): %s", p, unchecked)
	} else {
		require.NoError(t, err)
	}
	return p
}

func TestLoad(t *testing.T) {
	assert.Equal(t, []string{AzureLLM, NASA}, Files())
	for _, tc := range []struct {
		name      string
		binStep   time.Duration
		step      time.Duration
		n         int
		total     float64
		meanAbout float64
	}{
		{NASA, time.Second, time.Second, 2505600, 0, 0.7},
		{AzureLLM, time.Second, time.Second, 0, 8819, 0},
		{AzureLLM, time.Minute, time.Minute, 0, 8819, 0},
	} {
		t.Run(tc.name+"@"+tc.binStep.String(), func(t *testing.T) {
			require.True(t, Has(tc.name))
			s, err := Load(tc.name, tc.binStep)
			require.NoError(t, err)
			require.NoError(t, s.Validate())
			assert.Equal(t, tc.name, s.Name)
			assert.Equal(t, tc.step, s.Step)
			if tc.n > 0 {
				assert.Len(t, s.Values, tc.n)
			}
			if tc.total > 0 {
				assert.InDelta(t, tc.total, s.Total(), 0)
			}
			if tc.meanAbout > 0 {
				assert.InDelta(t, tc.meanAbout, s.MeanRate(), 0.1)
			}
		})
	}
	assert.False(t, Has(Twitter), "the Twitter trace must not be shipped: its source states no licence")
	_, err := Load(Twitter, time.Second)
	assert.ErrorContains(t, err, "not in the repository")
}

// TestShippedMatchesShared checks that the shipped copies are byte for byte
// the shared files and load to the same series as trace.Load gives.
func TestShippedMatchesShared(t *testing.T) {
	for _, name := range Files() {
		t.Run(name, func(t *testing.T) {
			p := sharedFile(t, name, "the shipped copy is not compared with it")
			disk, err := os.ReadFile(p)
			require.NoError(t, err)
			embedded, err := files.ReadFile(name)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(disk, embedded), "the shipped %s differs from %s", name, p)
			want, err := trace.Load(p, trace.WithBinStep(10*time.Second))
			require.NoError(t, err)
			got, err := Load(name, 10*time.Second)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestFitted(t *testing.T) {
	f, ok := Fitted(Twitter)
	require.True(t, ok)
	assert.Equal(t, Twitter, f.File)
	require.NoError(t, f.Params.Validate())
	f.Params.Diurnal[0].Amplitude = 0.9
	again, _ := Fitted(Twitter)
	assert.NotEqual(t, 0.9, again.Params.Diurnal[0].Amplitude, "Fitted returns a copy")
	s, err := trace.Generate(again.Params, time.Minute, again.Span, 1)
	require.NoError(t, err)
	assert.InDelta(t, again.Params.BaseRate, s.MeanRate(), 0.05*again.Params.BaseRate)
	for _, name := range Files() {
		_, ok := Fitted(name)
		assert.False(t, ok, "%s is shipped: no fitted stand-in", name)
	}
}

// TestTwitterFit re-fits the Twitter trace, when it is present, and
// compares the result with the parameters committed in fitted.go. If the
// file or trace.Fit changed, refresh them from
// `aware trace fit ../shared/traces/twitter-stream-rps.dev.txt.gz`.
func TestTwitterFit(t *testing.T) {
	p := sharedFile(t, Twitter, "the parameters committed in fitted.go are not re-fitted")
	s, err := trace.Load(p)
	require.NoError(t, err)
	assert.Equal(t, twitterFit.Span, s.Span())
	got, err := trace.Fit(s)
	require.NoError(t, err)
	want := twitterFit.Params
	close := func(field string, w, g float64) {
		t.Helper()
		assert.LessOrEqual(t, math.Abs(w-g), 1e-9*math.Max(1, math.Abs(w)), "%s: committed %v, re-fitted %v", field, w, g)
	}
	close("baseRate", want.BaseRate, got.BaseRate)
	for _, c := range []struct {
		name      string
		want, got []trace.Harmonic
	}{{"diurnal", want.Diurnal, got.Diurnal}, {"weekly", want.Weekly, got.Weekly}} {
		require.Len(t, c.got, len(c.want), c.name)
		for i := range c.want {
			close(c.name+" amplitude", c.want[i].Amplitude, c.got[i].Amplitude)
			close(c.name+" peakHour", c.want[i].PeakHour, c.got[i].PeakHour)
		}
	}
	close("slowCoef", want.SlowCoef, got.SlowCoef)
	close("slowSigma", want.SlowSigma, got.SlowSigma)
	close("fastCoef", want.FastCoef, got.FastCoef)
	close("fastSigma", want.FastSigma, got.FastSigma)
	wb, gb := want.Bursts, got.Bursts
	close("bursts.ratePerHour", wb.RatePerHour, gb.RatePerHour)
	close("bursts.periodSeconds", wb.PeriodSeconds, gb.PeriodSeconds)
	close("bursts.phaseSeconds", wb.PhaseSeconds, gb.PhaseSeconds)
	close("bursts.probability", wb.Probability, gb.Probability)
	close("bursts.magnitude", wb.Magnitude, gb.Magnitude)
	close("bursts.holdSeconds", wb.HoldSeconds, gb.HoldSeconds)
	close("bursts.decaySeconds", wb.DecaySeconds, gb.DecaySeconds)
	require.Len(t, gb.HeightQuantiles, len(wb.HeightQuantiles))
	for i := range wb.HeightQuantiles {
		close("bursts.heightQuantiles", wb.HeightQuantiles[i], gb.HeightQuantiles[i])
	}
}
