package trace

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// statRows are the rows of WriteStatsTable.
var statRows = []struct {
	label string
	value func(Stats) string
}{
	{"span", func(s Stats) string { return s.Span.String() }},
	{"step", func(s Stats) string { return s.Step.String() }},
	{"requests", func(s Stats) string { return fmt.Sprintf("%.0f", s.Total) }},
	{"mean rate (/s)", func(s Stats) string { return num(s.MeanRate, 4) }},
	{"CV (own step)", func(s Stats) string { return num(s.Native.CV, 3) }},
	{"ACF1 (own step)", func(s Stats) string { return num(s.Native.ACF1, 3) }},
	{"CV 1m", func(s Stats) string { return num(s.Minute.CV, 3) }},
	{"ACF1 1m", func(s Stats) string { return num(s.Minute.ACF1, 3) }},
	{"peak/mean 1m (p99)", func(s Stats) string { return num(s.Minute.PeakToMean, 3) }},
	{"max/mean 1m", func(s Stats) string { return num(s.Minute.MaxToMean, 3) }},
	{"CV 1h", func(s Stats) string { return num(s.Hour.CV, 3) }},
	{"ACF1 1h", func(s Stats) string { return num(s.Hour.ACF1, 3) }},
	{"peak/mean 1h (p99)", func(s Stats) string { return num(s.Hour.PeakToMean, 3) }},
}

// WriteStatsTable writes an aligned table with one column per series and
// one row per statistic; undefined statistics read "n/a".
func WriteStatsTable(w io.Writer, stats ...Stats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "statistic\t")
	for _, s := range stats {
		fmt.Fprintf(tw, "%s\t", s.Name)
	}
	fmt.Fprintln(tw)
	for _, r := range statRows {
		fmt.Fprintf(tw, "%s\t", r.label)
		for _, s := range stats {
			fmt.Fprintf(tw, "%s\t", r.value(s))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func num(v float64, digits int) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f", digits, v)
}
