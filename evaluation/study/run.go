package study

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Run runs the plan's cells that the store does not hold yet with fn, on
// workers goroutines, saving each result as it finishes, and returns the
// results of every cell of the plan (read back from the store, so that a
// resumed run returns exactly what an uninterrupted one would). If a cell
// fails, the cells already running finish and are saved, no new cell
// starts, and the error of the failed cell earliest in the plan is
// returned.
//
// Cells start in plan order, except that while the first cell of an arm
// runs, the arm's other cells wait if a cell of another arm can start: an
// arm's first cell may build what all its cells share (the adaptation
// study's meta-training run), and the other workers would only wait for it.
func Run[R any](ctx context.Context, s *Store, plan Plan, workers int, progress *Progress, fn func(context.Context, Cell) (R, error)) ([]R, error) {
	if err := plan.Validate(); err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	todo := s.Missing(plan)
	if progress != nil {
		progress.start(len(plan), len(plan)-len(todo))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(todo))
	d := newDispatcher(plan, todo)
	var wg sync.WaitGroup
	for range max(min(workers, len(todo)), 1) {
		wg.Go(func() {
			for {
				i, ok := d.take()
				if !ok {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				c := todo[i]
				r, err := fn(ctx, c)
				if err == nil {
					err = s.Put(c, r)
				}
				if err != nil {
					errs[i] = fmt.Errorf("study: cell %s: %w", c.Key(), err)
					cancel()
					continue
				}
				d.done(i)
				if progress != nil {
					progress.done(c)
				}
			}
		})
	}
	wg.Wait()
	// The failure that caused the cancellation (the earliest in the plan),
	// not the cancellations; the context's error when that is all there is.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || ctxErr(first) && !ctxErr(err)) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	out := make([]R, len(plan))
	for i, c := range plan {
		if err := s.Get(c, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dispatcher hands out a run's cells: in plan order, but an arm whose
// first cell is running and none has finished is passed over while a cell
// of another arm can start (see Run).
type dispatcher struct {
	mu      sync.Mutex
	todo    Plan
	taken   []bool
	started map[string]bool // an arm's cell has been handed out
	warm    map[string]bool // an arm's cell has finished (in this run or before)
}

func newDispatcher(plan, todo Plan) *dispatcher {
	d := &dispatcher{todo: todo, taken: make([]bool, len(todo)), started: map[string]bool{}, warm: map[string]bool{}}
	missing := map[string]bool{}
	for _, c := range todo {
		missing[c.Key()] = true
	}
	for _, c := range plan {
		if !missing[c.Key()] {
			d.warm[c.Arm] = true
		}
	}
	return d
}

// take returns the index in todo of the next cell to run, false when every
// cell has been handed out.
func (d *dispatcher) take() (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	first := -1
	for i, c := range d.todo {
		if d.taken[i] {
			continue
		}
		if first < 0 {
			first = i
		}
		if !d.started[c.Arm] || d.warm[c.Arm] {
			first = i
			break
		}
	}
	if first < 0 {
		return 0, false
	}
	d.taken[first] = true
	d.started[d.todo[first].Arm] = true
	return first, true
}

// done records that todo[i] finished.
func (d *dispatcher) done(i int) {
	d.mu.Lock()
	d.warm[d.todo[i].Arm] = true
	d.mu.Unlock()
}

// ctxErr reports whether err is, or wraps, a context's end.
func ctxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Progress prints a study's progress: cells done of all, elapsed time and
// the time left at the pace of the cells run so far, at most once per
// percent of the plan.
type Progress struct {
	W    io.Writer
	Name string
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu              sync.Mutex
	total, done0, n int
	began           time.Time
	lastPct         int
}

func (p *Progress) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Progress) start(total, done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.done0, p.n, p.began, p.lastPct = total, done, done, p.now(), -1
	if done > 0 {
		fmt.Fprintf(p.W, "%s: %d of %d cells already done (resuming)\n", p.Name, done, total)
	}
}

func (p *Progress) done(c Cell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	pct := 100 * p.n / max(p.total, 1)
	if pct == p.lastPct && p.n < p.total {
		return
	}
	p.lastPct = pct
	elapsed := p.now().Sub(p.began)
	ran := p.n - p.done0
	left := time.Duration(float64(elapsed) / float64(ran) * float64(p.total-p.n))
	fmt.Fprintf(p.W, "%s: %d/%d cells (%d%%), %s elapsed, about %s left (last %s)\n",
		p.Name, p.n, p.total, pct, elapsed.Round(time.Second), left.Round(time.Second), c.Key())
}
