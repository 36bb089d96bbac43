package scale

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Bench runs the benchmark of cfg (Run) with a line about it and its
// duration on progress, prints its table to out and, with check, returns
// an error naming the targets missed (`aware bench controller --check`).
func Bench(ctx context.Context, cfg Config, check bool, out, progress io.Writer) error {
	start := time.Now()
	fmt.Fprintf(progress, "scale benchmark: %d apps on the local control plane, step %s, %d rounds, in %s…\n", cfg.Apps, cfg.Step, cfg.Rounds, cfg.Dir)
	res, err := Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := WriteTable(out, res); err != nil {
		return err
	}
	fmt.Fprintf(progress, "benchmark took %s\n", time.Since(start).Round(time.Second))
	if missed := res.Missed(); check && len(missed) > 0 {
		return fmt.Errorf("bench controller: %d target(s) missed:\n  %s", len(missed), strings.Join(missed, "\n  "))
	}
	return nil
}
