package faults

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aware-autoscaler/aware/controller/trajectory"
)

// gapEpisodes counts the episodes whose steps skip a step index.
func gapEpisodes(steps map[string][]trajectory.Step) int {
	n := 0
	for _, ss := range steps {
		byEp := map[int64][]int{}
		for _, s := range ss {
			byEp[s.Episode] = append(byEp[s.Episode], s.T)
		}
		for _, ts := range byEp {
			slices.Sort(ts)
			for i := 1; i < len(ts); i++ {
				if ts[i] != ts[i-1]+1 {
					n++
					break
				}
			}
		}
	}
	return n
}

// recovered waits until every MPA has a stored step taken at or after
// since and returns how long after since the last of them came.
func (l *lab) recovered(ctx context.Context, since time.Time) (time.Duration, error) {
	deadline := time.Now().Add(recoveryLimit)
	for {
		steps, err := l.steps(ctx, since, time.Now().Add(l.cfg.Step))
		missing, last := 0, since
		if err == nil {
			for _, app := range l.mpas {
				ss := steps[app]
				if len(ss) == 0 {
					missing++
					continue
				}
				first := slices.MinFunc(ss, func(a, b trajectory.Step) int { return a.Time.Compare(b.Time) })
				last = maxTime(last, first.Time)
			}
			if missing == 0 {
				return last.Sub(since), nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d MPAs recorded no step within %s (last read error: %v)", missing, len(l.mpas), recoveryLimit, err)
		}
		if err := sleepUntil(ctx, time.Now().Add(time.Second)); err != nil {
			return 0, err
		}
	}
}

// delivered waits until InfluxDB holds every step the controller recorded
// from w's start to a mid-round instant after now, and returns how long
// after the call that was.
func (l *lab) delivered(ctx context.Context, w window) (time.Duration, error) {
	began := time.Now()
	tm, err := l.midRound(ctx)
	if err != nil {
		return 0, err
	}
	c, err := l.total(ctx)
	if err != nil {
		return 0, err
	}
	want := int(c.recorded - w.c0.recorded)
	deadline := time.Now().Add(recoveryLimit)
	for {
		steps, err := l.steps(ctx, w.t0, tm)
		got := 0
		for _, ss := range steps {
			got += len(ss)
		}
		if err == nil && got >= want {
			return time.Since(began), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("InfluxDB holds %d of the %d steps recorded (last read error: %v)", got, want, err)
		}
		if err := sleepUntil(ctx, time.Now().Add(time.Second)); err != nil {
			return 0, err
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
