package speed

import (
	"fmt"
	"io"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// Bench times every case (Cases, Measure), saying so on progress first,
// and prints the table to out (`aware bench rl`).
func Bench(out, progress io.Writer) error {
	fmt.Fprintf(progress, "timing the RL library, %s kernels (about a minute)…\n", rl.Kernels())
	rows, err := Measure(Cases())
	if err != nil {
		return err
	}
	return WriteTable(out, rows)
}
