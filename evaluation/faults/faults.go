package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/infra/cluster"
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
	dir, err := cluster.FreshDir(cfg.Dir)
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
	var in injection
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
		in.revert = time.Now()
		in.outages = append(in.outages, [2]time.Time{stop, in.revert})
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
		in.revert, in.delivery = time.Now(), true
		row.Note = fmt.Sprintf("InfluxDB stopped for %s; the controller spools and journals its steps, recovery is until InfluxDB holds every step recorded", l.cfg.InfluxDown)
	case FaultAPIServer:
		stop := time.Now()
		if err := l.cl.Restart(ctx, "kube-apiserver"); err != nil {
			return row, err
		}
		in.revert = time.Now()
		in.restarts = append(in.restarts, [2]time.Time{stop, in.revert})
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
		in.revert = time.Now()
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
		in.revert = time.Now()
		row.Note = fmt.Sprintf("the controller SIGKILLed %d times in a row, mid-round, each time started again at once (a step records the transition ending at it, so a new controller records from its second step)", l.cfg.Kills)
	case FaultMetrics:
		held, bad, note, err := l.badMetrics(ctx)
		if err != nil {
			return row, err
		}
		in.revert, row.Note, in.held, in.bad = bad[1], note, held, bad
	case FaultObjects:
		note, failed, err := l.malformed(ctx)
		if err != nil {
			return row, err
		}
		in.revert, row.Note, row.Failed = time.Now(), note, failed
		row.MPAs = len(l.mpas)
	case FaultBurst:
		note, failed, err := l.burst(ctx)
		if err != nil {
			return row, err
		}
		in.revert, row.Note, row.Failed = time.Now(), note, failed
	}
	return row, l.finish(ctx, w, &row, in)
}

// injection is what a fault did, for finish to judge.
type injection struct {
	revert time.Time
	// outages are Prometheus outages: no MPA may record a step of a
	// round whose metrics window lies wholly inside one.
	outages [][2]time.Time
	// held are MPAs whose pods exported bad metrics during bad: none may
	// record a step of a round whose window lies wholly inside it, and
	// every other MPA must record steps then.
	held []string
	bad  [2]time.Time
	// restarts are when the API server was down or starting.
	restarts [][2]time.Time
	// delivery: recovery lasts until InfluxDB holds every step recorded.
	delivery bool
}

// inside reports whether the metrics window of the round of a step taken
// at t lies wholly inside iv.
func inside(t time.Time, step time.Duration, iv [2]time.Time) bool {
	r := t.Truncate(step)
	return !r.Add(-step).Before(iv[0]) && !r.After(iv[1])
}

// heldSteps counts the steps of held MPAs taken in a round whose window lay
// wholly inside bad, and names the other MPAs that recorded no step in such
// a round.
func heldSteps(steps map[string][]trajectory.Step, held []string, bad [2]time.Time, mpas []string, step time.Duration) (wrong int, stalled []string) {
	for _, m := range held {
		for _, s := range steps[m] {
			if inside(s.Time, step, bad) {
				wrong++
			}
		}
	}
	// A round wholly inside the interval exists only if it lasted two
	// steps; otherwise there is nothing to ask of the others.
	if bad[1].Sub(bad[0]) < 2*step {
		return wrong, nil
	}
	for _, m := range mpas {
		if slices.Contains(held, m) {
			continue
		}
		if !slices.ContainsFunc(steps[m], func(s trajectory.Step) bool { return inside(s.Time, step, bad) }) {
			stalled = append(stalled, m)
		}
	}
	return wrong, stalled
}

// refused returns the controller's requests the API server refused with
// 403 Forbidden between from and to, from the audit log, leaving out (and
// counting) those received while it was restarting: a starting API server
// refuses what its authorizer has not yet synced, which no role changes.
func (l *lab) refused(from, to time.Time, restarts [][2]time.Time) ([]cluster.AuditEvent, int, error) {
	evs, err := l.cl.Forbidden(l.ctlUser)
	if err != nil {
		return nil, 0, err
	}
	var out []cluster.AuditEvent
	excused := 0
	for _, e := range evs {
		if e.At.Before(from) || e.At.After(to) {
			continue
		}
		if slices.ContainsFunc(restarts, func(r [2]time.Time) bool { return !e.At.Before(r[0]) && !e.At.After(r[1]) }) {
			excused++
			continue
		}
		out = append(out, e)
	}
	return out, excused, nil
}

// finish waits for recovery and fills the row's measurements.
func (l *lab) finish(ctx context.Context, w window, row *Row, in injection) error {
	var failed []string
	if row.Failed != "" {
		failed = append(failed, row.Failed)
	}
	rec, err := l.recovered(ctx, in.revert)
	if err != nil {
		failed = append(failed, err.Error())
	}
	if in.delivery {
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
			for _, o := range in.outages {
				if inside(s.Time, step, o) {
					row.WrongActions++
				}
			}
		}
	}
	if row.WrongActions > 0 {
		failed = append(failed, fmt.Sprintf("%d steps taken in rounds without metrics", row.WrongActions))
	}
	if len(in.held) > 0 {
		wrong, stalled := heldSteps(steps, in.held, in.bad, l.mpas, step)
		row.WrongActions += wrong
		if wrong > 0 {
			failed = append(failed, fmt.Sprintf("%d steps taken from bad metrics", wrong))
		}
		if len(stalled) > 0 {
			failed = append(failed, fmt.Sprintf("%d MPAs with good metrics recorded no step while others' were bad (first: %s)", len(stalled), stalled[0]))
		}
	}
	refused, excused, err := l.refused(w.t0, t1, in.restarts)
	if err != nil {
		return err
	}
	row.Refused = len(refused)
	if row.Refused > 0 {
		failed = append(failed, fmt.Sprintf("%d requests refused by RBAC (first: %s)", row.Refused, refused[0]))
	}
	if excused > 0 {
		row.Note += fmt.Sprintf("; %d requests refused while the API server was starting (its authorizer not yet synced), not counted", excused)
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
