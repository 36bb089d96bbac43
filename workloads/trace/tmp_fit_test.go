package trace

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func TestTmpFit(t *testing.T) {
	for _, f := range []string{"nasa-1995-http-rps.dev.txt.gz", "twitter-stream-rps.dev.txt.gz", "azure-llm-2023-code.csv.gz"} {
		s, _ := Load("/work/shared/traces/" + f)
		t0 := time.Now()
		p, err := Fit(s)
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(t0)
		b, _ := json.Marshal(p)
		fmt.Printf("%s fit %v\n%s\n", f, el, b)
		t0 = time.Now()
		for seed := uint64(1); seed <= 3; seed++ {
			g, err := Generate(p, s.Step, s.Span(), seed)
			if err != nil {
				t.Fatal(err)
			}
			if seed == 1 {
				fmt.Println("gen", time.Since(t0))
				pr("real", Describe(s))
			}
			pr(fmt.Sprint("syn", seed), Describe(g))
		}
	}
}

func pr(tag string, d Stats) {
	fmt.Printf("%-6s mean %7.3f | native cv %5.2f acf %5.2f p2m %5.1f | 1m cv %5.2f acf %5.2f p2m %5.2f max %5.2f | 1h cv %5.2f acf %5.2f p2m %5.2f\n", tag, d.MeanRate,
		d.Native.CV, d.Native.ACF1, d.Native.PeakToMean, d.Minute.CV, d.Minute.ACF1, d.Minute.PeakToMean, d.Minute.MaxToMean, d.Hour.CV, d.Hour.ACF1, d.Hour.PeakToMean)
}
