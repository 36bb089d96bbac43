package generator_test

import (
	"fmt"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/calibration"
)

// Generate a small pool from the committed calibration profile; the same
// options always give the same apps.
func ExampleGenerate() {
	prof, err := calibration.Default()
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := generator.DefaultOptions()
	opts.Apps, opts.Seed = 10, 1
	apps, err := generator.Generate(opts, prof)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := generator.Summarize(apps, prof)
	fmt.Println(len(apps), "apps:", s.Train, "train,", s.Test, "test; first", apps[0].Name())
	// Output: 10 apps: 8 train, 2 test; first app-0001
}
