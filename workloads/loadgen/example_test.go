package loadgen_test

import (
	"fmt"
	"time"

	"github.com/aware-autoscaler/aware/workloads/loadgen"
)

func ExampleConstant() {
	s, err := loadgen.Constant(4, time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Arrivals, s.Rate())
	// Output: [0s 250ms 500ms 750ms] 4
}

func ExampleHistogram() {
	var h loadgen.Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	// Quantiles are within 0.4 % of the exact values, 500 ms and 990 ms.
	fmt.Println(h.Quantile(0.5).Round(time.Millisecond), h.Quantile(0.99).Round(time.Millisecond), h.Max())
	// Output: 500ms 992ms 1s
}
