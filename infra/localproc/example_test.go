package localproc_test

import (
	"fmt"
	"syscall"

	"github.com/aware-autoscaler/aware/infra/localproc"
)

func ExampleStart() {
	p, err := localproc.Start("/bin/sh", []string{"-c", "echo hello; exit 2"},
		localproc.WithTail(1<<10), localproc.WithDeathSignal(syscall.SIGTERM))
	if err != nil {
		fmt.Println(err)
		return
	}
	<-p.Done()
	fmt.Print(p.LogTail(1 << 10))
	fmt.Println(p.Err())
	// Output:
	// hello
	// exit status 2
}
