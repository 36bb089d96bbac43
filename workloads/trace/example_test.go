package trace_test

import (
	"fmt"
	"time"

	"github.com/aware-autoscaler/aware/workloads/trace"
)

func ExampleResample() {
	perSecond := trace.Series{Name: "demo", Step: time.Second, Values: []float64{1, 2, 3, 4, 5, 6}}
	coarse, _ := trace.Resample(perSecond, 3*time.Second) // counts are summed
	fine, _ := trace.Resample(coarse, 1500*time.Millisecond)
	fmt.Println(coarse.Values, fine.Values)
	// Output: [6 15] [3 3 7.5 7.5]
}

func ExampleHighToLow() {
	s := trace.Series{Name: "demo", Step: time.Minute, Values: []float64{5, 5, 9, 9, 1, 1, 5, 5}}
	sp, _ := trace.SplitHighLow(s, 2*time.Minute)
	hl, _ := trace.HighToLow(s, 2*time.Minute)
	fmt.Println(sp.HighStart, sp.LowStart, hl.Values)
	// Output: 2m0s 4m0s [9 9 1 1]
}

func ExampleArrivals() {
	// Scale a shape to 2 requests per second, then draw arrival times.
	shape := trace.Series{Step: time.Second, Values: []float64{1, 3, 0, 4}}
	load, _ := trace.ScaleToMean(shape, 2)
	at, _ := trace.Arrivals(load, 1)
	perSecond := make([]int, load.Len())
	for _, t := range at {
		perSecond[t/time.Second]++
	}
	fmt.Println(len(at), perSecond)
	// Output: 8 [1 3 0 4]
}

func ExampleGenerate() {
	p := trace.Params{
		BaseRate: 10,
		Diurnal:  []trace.Harmonic{{Amplitude: 0.5, PeakHour: 14}},
		FastCoef: 0.5, FastSigma: 0.1,
	}
	s, _ := trace.Generate(p, time.Minute, 7*24*time.Hour, 42)
	st := trace.Describe(s)
	fmt.Printf("mean %.1f/s, hourly CV %.2f, hourly lag-1 ACF %.2f\n", st.MeanRate, st.Hour.CV, st.Hour.ACF1)
	fitted, _ := trace.Fit(s)
	fmt.Printf("fitted diurnal amplitude %.2f peaking at %.0f h\n", fitted.Diurnal[0].Amplitude, fitted.Diurnal[0].PeakHour)
	// Output:
	// mean 10.0/s, hourly CV 0.35, hourly lag-1 ACF 0.95
	// fitted diurnal amplitude 0.50 peaking at 14 h
}
