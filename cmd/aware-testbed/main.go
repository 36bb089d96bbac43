// Command aware-testbed stands up, inspects and tears down AWARE testbeds
// with Pulumi (testbed/). It is a binary of its own so that the Pulumi
// SDK stays out of the aware binary, which every workload pod and the
// controller run; "aware testbed up|preview|status|down|render" runs it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "aware-testbed:", err)
		os.Exit(1)
	}
}
