package train

import (
	"context"
	"sync"
)

// Each runs fn(i) for i in [0, n) on workers goroutines (at least one) and
// returns the error of the lowest i that failed, so that the error does not
// depend on which worker finished first. Once ctx is done the remaining
// indices are not run; they fail with ctx's error.
func Each(ctx context.Context, n, workers int, fn func(i int) error) error {
	errs := make([]error, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(min(workers, n), 1) {
		wg.Go(func() {
			for i := range jobs {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				errs[i] = fn(i)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
