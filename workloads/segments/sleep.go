package segments

import (
	"context"
	"time"
)

func init() {
	Register(Info{
		Name:  "sleep",
		Unit:  "milliseconds",
		Sizes: []int{100, 200, 300, 400, 500},
		New: func(_ context.Context, size int, _ Env) (Instance, error) {
			return sleepSeg{d: time.Duration(size) * time.Millisecond}, nil
		},
	})
}

// sleepSeg waits for a fixed duration: a segment that holds a request (and its
// memory) without using CPU, like a call to a slow downstream service.
type sleepSeg struct{ d time.Duration }

func (s sleepSeg) Run(ctx context.Context) (Result, error) {
	t := time.NewTimer(s.d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-t.C:
		return Result{Items: 1, Ops: int64(s.d / time.Millisecond)}, nil
	}
}

func (sleepSeg) Close(context.Context) error { return nil }
