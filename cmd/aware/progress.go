package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/evaluation/progress"
)

// bar is a one-line progress bar redrawn in place.
type bar struct {
	w     io.Writer
	label string
	total int
	last  int
	every int // percent between redraws: 1 on a terminal, 10 in logs
	start time.Time
}

func newBar(w io.Writer, label string, total int) *bar {
	b := &bar{w: w, label: label, total: total, last: -1, every: 10, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			b.every = 1
		}
	}
	b.set(0)
	return b
}

func (b *bar) set(done int) {
	pct := 100 * done / b.total
	if pct == b.last || (pct%b.every != 0 && done != b.total) {
		return
	}
	b.last = pct
	const width = 30
	fill := width * done / b.total
	el := time.Since(b.start)
	eta := ""
	if done > 0 && done < b.total {
		eta = fmt.Sprintf(", ETA %s", (el * time.Duration(b.total-done) / time.Duration(done)).Round(time.Second))
	}
	fmt.Fprintf(b.w, "\r%s [%s%s] %3d%% %s%s", b.label, strings.Repeat("#", fill), strings.Repeat(".", width-fill), pct, el.Round(100*time.Millisecond), eta)
}

func (b *bar) done() { fmt.Fprintln(b.w) }

// bars draws the evaluation runs' progress bars (progress.Bar) on w.
func bars(w io.Writer) progress.Bar {
	return func(label string, total int) (func(int), func()) {
		b := newBar(w, label, total)
		return b.set, b.done
	}
}
