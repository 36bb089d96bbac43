// Command program is the testbed's Pulumi program for `pulumi up` in
// testbed (Pulumi.yaml's main); `aware testbed` runs the same
// function through the Automation API.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/aware-autoscaler/aware/testbed"
)

func main() { pulumi.Run(testbed.StackProgram) }
