package trace

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fitSeeds are the seeds whose synthetic statistics are averaged: one seed
// alone varies (the NASA mean by about ±8 %), the model's expectation less.
var fitSeeds = []uint64{1, 2, 3}

// comparedStats are the statistics the fit must reproduce, with tolerances:
// relative (rel) or absolute (abs).
var comparedStats = []struct {
	name     string
	get      func(Stats) float64
	rel, abs float64
}{
	{"mean rate", func(s Stats) float64 { return s.MeanRate }, 0.05, 0},
	{"CV 1m", func(s Stats) float64 { return s.Minute.CV }, 0.25, 0},
	{"ACF1 1m", func(s Stats) float64 { return s.Minute.ACF1 }, 0, 0.15},
	{"ACF1 1h", func(s Stats) float64 { return s.Hour.ACF1 }, 0, 0.15},
	{"CV 1h", func(s Stats) float64 { return s.Hour.CV }, 0.25, 0},
	{"peak/mean 1m", func(s Stats) float64 { return s.Minute.PeakToMean }, 0.35, 0},
	{"peak/mean 1h", func(s Stats) float64 { return s.Hour.PeakToMean }, 0.35, 0},
}

// reportedStats are printed for information only.
var reportedStats = []struct {
	name string
	get  func(Stats) float64
}{
	{"CV native", func(s Stats) float64 { return s.Native.CV }},
	{"ACF1 native", func(s Stats) float64 { return s.Native.ACF1 }},
	{"max/mean 1m", func(s Stats) float64 { return s.Minute.MaxToMean }},
}

func TestFitRealTraces(t *testing.T) {
	dir := sharedTraces(t)
	for _, name := range []string{"nasa-1995-http-rps.dev.txt.gz", "twitter-stream-rps.dev.txt.gz", "azure-llm-2023-code.csv.gz"} {
		t.Run(name, func(t *testing.T) {
			observed, err := Load(filepath.Join(dir, name))
			require.NoError(t, err)
			p, err := Fit(observed)
			require.NoError(t, err)
			require.NoError(t, p.Validate())
			want := Describe(observed)
			var syn []Stats
			for _, seed := range fitSeeds {
				g, err := Generate(p, observed.Step, observed.Span(), seed)
				require.NoError(t, err)
				syn = append(syn, Describe(g))
			}
			var table strings.Builder
			tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(tw, "statistic\treal\tsynthetic (mean of %d seeds)\tper seed\t\n", len(fitSeeds))
			for _, c := range comparedStats {
				got, per := average(syn, c.get)
				fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%s\t\n", c.name, c.get(want), got, per)
				w := c.get(want)
				switch {
				case math.IsNaN(w):
					assert.True(t, math.IsNaN(got), "%s: real is undefined (n/a), synthetic %v", c.name, got)
				case c.rel > 0:
					assert.InEpsilon(t, w, got, c.rel, "%s: real %.3f, synthetic %.3f", c.name, w, got)
				default:
					assert.InDelta(t, w, got, c.abs, "%s: real %.3f, synthetic %.3f", c.name, w, got)
				}
			}
			for _, r := range reportedStats {
				got, per := average(syn, r.get)
				fmt.Fprintf(tw, "%s (not checked)\t%.3f\t%.3f\t%s\t\n", r.name, r.get(want), got, per)
			}
			require.NoError(t, tw.Flush())
			t.Logf("%s: %s\n%s", name, observed.Span(), strings.ReplaceAll(table.String(), "NaN", "n/a"))
		})
	}
}

// average returns the mean of get over stats and the values joined.
func average(stats []Stats, get func(Stats) float64) (float64, string) {
	var sum float64
	vals := make([]string, len(stats))
	for i, s := range stats {
		sum += get(s)
		vals[i] = fmt.Sprintf("%.3f", get(s))
	}
	return sum / float64(len(stats)), strings.Join(vals, " ")
}

func BenchmarkLoadShared(b *testing.B) {
	dir := sharedTraces(b)
	for _, name := range []string{"nasa-1995-http-rps.dev.txt.gz", "azure-llm-2023-code.csv.gz"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Load(filepath.Join(dir, name)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFitShared(b *testing.B) {
	s, err := Load(filepath.Join(sharedTraces(b), "nasa-1995-http-rps.dev.txt.gz"))
	require.NoError(b, err)
	b.Run("nasa", func(b *testing.B) {
		for b.Loop() {
			if _, err := Fit(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
