package server_test

import (
	"fmt"

	"github.com/aware-autoscaler/aware/workloads/server"
)

func ExampleParseCPUMax() {
	for _, s := range []string{"max 100000", "150000 100000"} {
		cores, err := server.ParseCPUMax(s)
		fmt.Println(cores, err)
	}
	// Output:
	// 0 <nil>
	// 1.5 <nil>
}
