package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// fakeApp is a Runner/App whose behaviour each test chooses; it records
// events in order so that tests can check the shutdown sequence.
type fakeApp struct {
	run func(ctx context.Context) (segments.Result, error)

	mu     sync.Mutex
	events []string
	runs   int
	closed bool
}

func (f *fakeApp) Run(ctx context.Context) (segments.Result, error) {
	f.mu.Lock()
	f.runs++
	f.mu.Unlock()
	var (
		r   = segments.Result{Items: 1, Ops: 2, Checksum: 42}
		err error
	)
	if f.run != nil {
		r, err = f.run(ctx)
	}
	f.record("run done")
	return r, err
}

func (f *fakeApp) Close(context.Context) error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.record("app closed")
	return nil
}

func (f *fakeApp) record(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

func (f *fakeApp) Events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

// blockingRun returns a run function that blocks until release is closed
// (or ctx is done), signalling started once per run.
func blockingRun(started chan<- struct{}, release <-chan struct{}) func(context.Context) (segments.Result, error) {
	return func(ctx context.Context) (segments.Result, error) {
		started <- struct{}{}
		select {
		case <-release:
			return segments.Result{Items: 1}, nil
		case <-ctx.Done():
			return segments.Result{}, ctx.Err()
		}
	}
}

var errBoom = errors.New("boom")

func setupOf(a App) Setup {
	return func(context.Context) (App, error) { return a, nil }
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}
