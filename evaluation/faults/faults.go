package faults

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// recoveryLimit bounds the wait for the controller to step every MPA
// again after a fault.
const recoveryLimit = 3 * time.Minute

// Run brings the testbed up, waits until the controller steps every MPA,
// runs the configured faults one after another and returns their rows.
// An error means the suite itself could not run; a fault that lost
// something is a row with Failed set (Report.Err).
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Report{}, err
	}
	dir, err := prepareDir(cfg.Dir)
	if err != nil {
		return Report{}, err
	}
	rep := Report{MPAs: cfg.MPAs, Step: cfg.Step, Started: time.Now()}
	l := &lab{cfg: cfg, log: cfg.Log, dir: dir}
	defer l.close()
	if err := l.up(ctx); err != nil {
		return rep, fmt.Errorf("faults: testbed: %w", err)
	}
	if _, err := l.recovered(ctx, time.Now()); err != nil {
		return rep, fmt.Errorf("faults: warm-up: %w", err)
	}
	l.log.Info("faults: every MPA steps; injecting", "faults", cfg.Faults)
	for _, f := range cfg.Faults {
		row, err := l.fault(ctx, f)
		if err != nil {
			return rep, fmt.Errorf("faults: %s: %w", f, err)
		}
		l.log.Info("faults: done", "fault", f, "lost", row.StepsLost, "recovery", row.Recovery, "failed", row.Failed)
		rep.Rows = append(rep.Rows, row)
	}
	rep.Took = time.Since(rep.Started)
	return rep, nil
}

// window is what a fault's measurement starts from.
type window struct {
	t0      time.Time
	c0      counters
	crashes int
}

func (l *lab) begin(ctx context.Context) (window, error) {
	t0, err := l.midRound(ctx)
	if err != nil {
		return window{}, err
	}
	c0, err := l.total(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	return window{t0: t0, c0: c0, crashes: l.crashes}, err
}

func (l *lab) fault(ctx context.Context, name string) (Row, error) {
	row := Row{Fault: name, MPAs: len(l.mpas)}
	w, err := l.begin(ctx)
	if err != nil {
		return row, err
	}
	var (
		revert   time.Time
		outages  [][2]time.Time
		delivery bool
	)
	switch name {
	case FaultPrometheus:
		stop := time.Now()
		if err := l.prom.Stop(); err != nil {
			return row, err
		}
		if err := sleepUntil(ctx, stop.Add(l.cfg.PrometheusDown)); err != nil {
			return row, err
		}
		if err := l.prom.Restart(ctx); err != nil {
			return row, err
		}
		revert = time.Now()
		outages = append(outages, [2]time.Time{stop, revert})
		row.Note = fmt.Sprintf("Prometheus stopped for %s mid-episode, then restarted on its address and TSDB; the controller holds (no step) while a round has no metrics", l.cfg.PrometheusDown)
	case FaultInfluxDB:
		stop := time.Now()
		if err := l.influx.Stop(); err != nil {
			return row, err
		}
		if err := sleepUntil(ctx, stop.Add(l.cfg.InfluxDown)); err != nil {
			return row, err
		}
		if err := l.influx.Restart(ctx); err != nil {
			return row, err
		}
		revert, delivery = time.Now(), true
		row.Note = fmt.Sprintf("InfluxDB stopped for %s; the controller spools and journals its steps, recovery is until InfluxDB holds every step recorded", l.cfg.InfluxDown)
	case FaultAPIServer:
		if err := l.cl.Restart(ctx, "kube-apiserver"); err != nil {
			return row, err
		}
		revert = time.Now()
		row.Note = "kube-apiserver restarted (SIGTERM, started again; kube-controller-manager, which exits when it goes away, started again as a kubelet would)"
	case FaultEtcd:
		if err := l.cl.Pause("etcd"); err != nil {
			return row, err
		}
		err := sleepUntil(ctx, time.Now().Add(l.cfg.EtcdPause))
		if rerr := l.cl.Resume("etcd"); err == nil {
			err = rerr
		}
		if err != nil {
			return row, err
		}
		revert = time.Now()
		if err := l.cl.Heal(ctx); err != nil {
			return row, err
		}
		row.Note = fmt.Sprintf("etcd paused (SIGSTOP) for %s: the API server holds and fails requests", l.cfg.EtcdPause)
	case FaultSIGKILL:
		for i := range l.cfg.Kills {
			if i > 0 {
				if _, err := l.midRound(ctx); err != nil {
					return row, err
				}
			}
			if err := l.kill(ctx); err != nil {
				return row, err
			}
		}
		revert = time.Now()
		row.Note = fmt.Sprintf("the controller SIGKILLed %d times in a row, mid-round, each time started again at once (a step records the transition ending at it, so a new controller records from its second step)", l.cfg.Kills)
	case FaultObjects:
		note, failed, err := l.malformed(ctx)
		if err != nil {
			return row, err
		}
		revert, row.Note, row.Failed = time.Now(), note, failed
		row.MPAs = len(l.mpas)
	case FaultBurst:
		note, failed, err := l.burst(ctx)
		if err != nil {
			return row, err
		}
		revert, row.Note, row.Failed = time.Now(), note, failed
	}
	return row, l.finish(ctx, w, &row, revert, outages, delivery)
}

// finish waits for recovery and fills the row's measurements.
func (l *lab) finish(ctx context.Context, w window, row *Row, revert time.Time, outages [][2]time.Time, delivery bool) error {
	var failed []string
	if row.Failed != "" {
		failed = append(failed, row.Failed)
	}
	rec, err := l.recovered(ctx, revert)
	if err != nil {
		failed = append(failed, err.Error())
	}
	if delivery {
		d, err := l.delivered(ctx, w)
		if err != nil {
			failed = append(failed, err.Error())
		}
		rec = max(rec, d)
	}
	row.Recovery = rec
	if _, err := l.midRound(ctx); err != nil {
		return err
	}
	t1, err := l.midRound(ctx)
	if err != nil {
		return err
	}
	c1, err := l.total(ctx)
	if err != nil {
		return err
	}
	steps, err := l.steps(ctx, w.t0, t1)
	if err != nil {
		return err
	}
	stored := 0
	for _, ss := range steps {
		stored += len(ss)
	}
	row.Recorded = int(c1.recorded - w.c0.recorded)
	if lost := row.Recorded - stored; lost > 0 {
		row.StepsLost = lost
		failed = append(failed, fmt.Sprintf("%d of %d recorded steps are not in InfluxDB", lost, row.Recorded))
	} else if lost < 0 {
		row.Note += fmt.Sprintf("; %d more steps stored than counted (a crash cut the count short)", -lost)
	}
	gaps := gapEpisodes(steps)
	row.TrajectoriesLost = int(c1.abandoned-w.c0.abandoned) + gaps
	if row.TrajectoriesLost > 0 {
		failed = append(failed, fmt.Sprintf("%d episodes abandoned or with a gap", row.TrajectoriesLost))
	}
	step := l.cfg.Step
	for _, ss := range steps {
		for _, s := range ss {
			r := s.Time.Truncate(step)
			for _, o := range outages {
				if !r.Add(-step).Before(o[0]) && !r.After(o[1]) {
					row.WrongActions++
				}
			}
		}
	}
	if row.WrongActions > 0 {
		failed = append(failed, fmt.Sprintf("%d steps taken in rounds without metrics", row.WrongActions))
	}
	l.mu.Lock()
	row.Crashes = l.crashes - w.crashes
	l.mu.Unlock()
	if row.Crashes > 0 {
		failed = append(failed, fmt.Sprintf("%d crashes", row.Crashes))
	}
	row.Failed = strings.Join(failed, "; ")
	return nil
}
