package shipped

import (
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/workloads/trace"
)

// Fit is the project's synthetic load model fitted to a trace that the
// repository may not ship: sample it with trace.Generate in the trace's
// place.
type Fit struct {
	// File is the trace's file name in the traces folder.
	File string
	// Span is the trace's length.
	Span time.Duration
	// Params are trace.Fit's estimate on the whole file.
	Params trace.Params
}

// Fitted returns the model fitted to the trace file name, if the
// repository holds one.
func Fitted(name string) (Fit, bool) {
	f, ok := fitted[name]
	if !ok {
		return Fit{}, false
	}
	p := &f.Params
	p.Diurnal, p.Weekly = slices.Clone(p.Diurnal), slices.Clone(p.Weekly)
	p.Bursts.HeightQuantiles = slices.Clone(p.Bursts.HeightQuantiles)
	return f, true
}

var fitted = map[string]Fit{Twitter: twitterFit}

// twitterFit is the model fitted to twitter-stream-rps.dev.txt.gz (11 days
// at one second, mean 63.9 tweets/s), as printed by
//
//	aware trace fit ../shared/traces/twitter-stream-rps.dev.txt.gz
//
// (file sha256 407af6849be4233a73a296dd956f6b984dd29c6828f8abfe3be6f924da5ef931).
// TestTwitterFit re-fits the file when it is present and compares.
var twitterFit = Fit{
	File: Twitter,
	Span: 264 * time.Hour,
	Params: trace.Params{
		BaseRate: 63.86836069023569,
		Diurnal: []trace.Harmonic{
			{Amplitude: 0.24862318447195472, PeakHour: 8.19251699594085},
			{Amplitude: 0.16722948641212915, PeakHour: 8.061767005225985},
			{Amplitude: 0.0159779487639269, PeakHour: 0.5681277171240886},
		},
		Weekly: []trace.Harmonic{
			{Amplitude: 0.012869781695696266, PeakHour: 103.01730814424644},
			{Amplitude: 0.016126144776272246, PeakHour: 33.683112309568},
		},
		SlowCoef:  0.5587942196308037,
		SlowSigma: 0.059600811118954364,
		FastCoef:  0.43813592969437604,
		FastSigma: 0.05536932836986003,
		Bursts: trace.Bursts{
			RatePerHour:     0.26515151515151514,
			PeriodSeconds:   7200,
			PhaseSeconds:    5460,
			Probability:     0.5,
			Magnitude:       2.9678731763556003,
			HeightQuantiles: []float64{0.142, 0.552, 0.878, 1.063, 1.098, 1.118, 1.131, 1.141, 1.155, 1.174, 1.431},
			HoldSeconds:     308.83956655165605,
			DecaySeconds:    132.8120594998867,
		},
	},
}
