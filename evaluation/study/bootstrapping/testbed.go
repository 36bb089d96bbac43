package bootstrapping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Testbed is the part of the study that runs on the testbed: its arms run
// as MPAs through the controller, the agent runner, Prometheus and
// InfluxDB, on Clock, and the same cells run on the simulator beside them.
type Testbed struct {
	Clock testbedrun.Clock
	// Arms run on the testbed (the converged arm needs a frozen policy
	// loaded into the runner, which the testbed does not do yet).
	Arms []string
}

// TestbedArms are the arms that run on the testbed.
var TestbedArms = []string{AWARE, NoBoot, Rule}

// OnTestbed is the study's size on the testbed: short episodes so that a
// quick run fits 20 minutes of wall time on 2 cores (6 applications × 3
// arms at once, 30 episodes of 10 steps of 30 s: 15 minutes at 10×, 10
// at 15×), 10 recorded; the simulator half trains BCQ as many updates as the agent
// runner does on the testbed (2 per record), and the converged policies
// as in Quick. Full is 20 applications, 60 episodes, 20 recorded.
func OnTestbed(full bool) Config {
	c := Config{Apps: 6, Episodes: 30, Records: 10, EpisodeSteps: 10, Converged: 300, Seed: 1}
	if full {
		c = Config{Apps: 20, Episodes: 60, Records: 20, EpisodeSteps: 10, Converged: 600, Seed: 1}
	}
	c.Updates = c.Records * c.EpisodeSteps * RunnerOfflineUpdates
	c.Testbed = &Testbed{Clock: testbedrun.DefaultClock(), Arms: slices.Clone(TestbedArms)}
	return c
}

// RunnerOfflineUpdates are the agent runner's offline updates per new
// record (aware agents --offline-updates, default 2).
const RunnerOfflineUpdates = 2

// TestbedFile holds the testbed cells' results in the study's folder.
const TestbedFile = "testbed.json"

// testbedRecord is TestbedFile: the configuration the cells ran with and
// their results, so that a resumed run reuses them and a changed one
// refuses them.
type testbedRecord struct {
	Config  Config              `json:"config"`
	Apps    []string            `json:"apps"`
	Results []testbedrun.Result `json:"results"`
}

// cellName is a testbed cell's objects' name.
func cellName(app, arm string) string {
	short := map[string]string{AWARE: "boot", NoBoot: "cold", Rule: "rule", Converged: "conv"}[arm]
	return app + "-" + short
}

// runTestbed runs the testbed's cells (or reads them from dir if this
// configuration ran them already) and returns them by (app, arm).
func (r *Runner) runTestbed(ctx context.Context, o lab.Run, apps []string) (map[[2]string]testbedrun.Result, error) {
	c := r.Config
	path := filepath.Join(o.Dir, TestbedFile)
	var rec testbedRecord
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("bootstrapping: %s: %w", path, err)
		}
		if !reflect.DeepEqual(rec.Config, c) || !slices.Equal(rec.Apps, apps) {
			return nil, fmt.Errorf("bootstrapping: %s holds testbed cells of another configuration; use another --out", path)
		}
	case errors.Is(err, fs.ErrNotExist):
		if o.Testbed == nil {
			return nil, fmt.Errorf("bootstrapping: the study's testbed cells need a testbed (--testbed DIR or --testbed-up)")
		}
		cells, err := r.testbedCells(ctx, apps)
		if err != nil {
			return nil, err
		}
		res, err := testbedrun.Run(ctx, o.Testbed, c.Testbed.Clock, cells, testbedrun.Options{Prefix: "aware-study-" + Name,
			Seed: c.Seed, Progress: o.Progress})
		if err != nil {
			return nil, err
		}
		rec = testbedRecord{Config: c, Apps: apps, Results: res}
		b, err := json.MarshalIndent(rec, "", " ")
		if err != nil {
			return nil, fmt.Errorf("bootstrapping: %w", err)
		}
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("bootstrapping: %w", err)
		}
		if err := atomicfile.Write(path, b, 0o644); err != nil {
			return nil, fmt.Errorf("bootstrapping: %w", err)
		}
	default:
		return nil, fmt.Errorf("bootstrapping: %w", err)
	}
	out := map[[2]string]testbedrun.Result{}
	for _, a := range apps {
		for _, arm := range c.Testbed.Arms {
			name := cellName(a, arm)
			i := slices.IndexFunc(rec.Results, func(r testbedrun.Result) bool { return r.Cell == name })
			if i < 0 {
				return nil, fmt.Errorf("bootstrapping: %s: no result of cell %s", path, name)
			}
			out[[2]string{a, arm}] = rec.Results[i]
		}
	}
	return out, nil
}

// testbedCells are the study's cells as MPAs: each application once per
// arm, under its own name, with the tuned HPA target of the simulator's
// rule-based arm. AWARE-bootstrapped is an MPA naming the agent runner
// whose agent bootstraps: the controller keeps HPA+VPA in charge (OFFLINE)
// until the window of its first Records episodes is complete and their
// mean reaches T_online, set just above 0 so that, as on the simulator,
// the hand-over comes after the records (the controller's lifecycle
// decides it, Algorithm 1); its serving thresholds cannot be met (the
// largest reward there is, varying by less than 1e-9), so the agent keeps
// training online as on the simulator.
// no-bootstrapping names the runner without bootstrapping (ONLINE from the
// first step); rule-based is the MPA's own HPA+VPA.
func (r *Runner) testbedCells(ctx context.Context, apps []string) ([]testbedrun.Cell, error) {
	c, l := r.Config, r.Lab
	var cells []testbedrun.Cell
	for _, name := range apps {
		app, _, err := l.App(name)
		if err != nil {
			return nil, err
		}
		tw, err := l.SimAt(name, c.Testbed.Clock.TwinSimStep())
		if err != nil {
			return nil, err
		}
		tuned, err := l.CPUTarget(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, arm := range c.Testbed.Arms {
			cell := testbedrun.Cell{Name: cellName(name, arm), App: app, Sim: tw, Recommender: testbedrun.AgentName,
				CPUTarget: tuned.Target, Episodes: c.Episodes}
			// Never frozen: serving needs a window of episodes at the largest
			// reward there is (2 per step: SP 1 and every pod fully used)
			// that vary by less than 1e-9.
			never, still := 2*float64(c.EpisodeSteps), 1e-9
			switch arm {
			case AWARE:
				cell.Profile = func(p *v1alpha1.AgentProfile) {
					p.EpisodeLength = c.EpisodeSteps
					p.Bootstrap = ptr(true)
					p.Thresholds = v1alpha1.RewardThresholds{Online: 1e-3, Window: c.Records, Serving: never, Variance: still}
				}
			case NoBoot:
				cell.Profile = func(p *v1alpha1.AgentProfile) {
					p.EpisodeLength = c.EpisodeSteps
					p.Bootstrap = ptr(false)
					p.Thresholds = v1alpha1.RewardThresholds{Online: 1e-3, Window: c.Records, Serving: never, Variance: still}
				}
			case Rule:
				cell.Recommender = v1alpha1.DefaultRecommenderName
				cell.Profile = func(p *v1alpha1.AgentProfile) {
					p.EpisodeLength = c.EpisodeSteps
					p.Bootstrap = ptr(false)
					p.Thresholds = v1alpha1.RewardThresholds{Online: 1e-3, Window: c.Records, Serving: never, Variance: still}
				}
			default:
				return nil, fmt.Errorf("bootstrapping: arm %s does not run on the testbed (it runs %s)", arm, strings.Join(TestbedArms, ", "))
			}
			cells = append(cells, cell)
		}
	}
	return cells, nil
}

func ptr[T any](v T) *T { return &v }

// testbedReport adds the testbed's tables to the simulator's report: per
// arm on the testbed, testbed against simulator for the same cells, the
// lifecycle the controller ran and how completely the system ran them.
func testbedReport(rep *study.Report, c Config, outs []Outcome, tb map[[2]string]testbedrun.Result, bs study.Bootstrap) error {
	apps := make([]string, len(outs))
	for i, o := range outs {
		apps[i] = o.App
	}
	arms := c.Testbed.Arms
	var meansErr error
	tbMeans := func(acting bool) lab.Values {
		return func(arm string, f lab.Figure) []float64 {
			out := make([]float64, len(apps))
			for i, a := range apps {
				var cv lab.Curve
				cv.Add(tb[[2]string{a, arm}].Episodes...)
				from := 0
				if acting {
					from = c.Records
				}
				m, err := cv.Means(from, c.Episodes)
				if err != nil {
					meansErr = errors.Join(meansErr, fmt.Errorf("bootstrapping: testbed cell %s: %w", cellName(a, arm), err))
					return nil
				}
				out[i] = f.Of(m)
			}
			return out
		}
	}
	clock := c.Testbed.Clock
	rep.Paragraphs = append(rep.Paragraphs, fmt.Sprintf("Where each cell ran: the arms %s ran twice, on the simulator and on the testbed, where each (application, arm) was an MPA of its own on the local testbed's control plane, stepped by the MPA controller, its agent hosted by the agent runner, its metrics read through Prometheus from a digital twin of the application playing the same load shape, its steps recorded in the testbed's InfluxDB, from which every testbed figure below is read; the stage changes are the controller's own (its StageChanged Events). Clock: %s. Episodes of %d steps on both.",
		strings.Join(arms, ", "), clock, c.EpisodeSteps))
	for _, part := range []struct {
		title  string
		acting bool
	}{
		{fmt.Sprintf("Testbed vs simulator, all %d episodes", c.Episodes), false},
		{fmt.Sprintf("Testbed vs simulator, episodes %d–%d (after the records)", c.Records+1, c.Episodes), true},
	} {
		t, _, err := lab.Comparison(part.title, arms, lab.Figures, bs, tbMeans(part.acting), valuesOf(outs, part.acting))
		if err := errors.Join(meansErr, err); err != nil {
			return err
		}
		rep.Tables = append(rep.Tables, t)
	}
	life := study.Table{Title: "Lifecycle on the testbed (the controller's StageChanged Events)", Columns: []string{"cell", "stages (episode: from → to, reason)", "simulator"}}
	health := study.Table{Title: "How completely the system ran the testbed cells (from their records in InfluxDB and the controller's counters)", Columns: []string{"cell", "records", "rounds missed", "steps lost", "stale actions", "rounds awaiting the agent's first action", "rounds an applied action stayed in force"},
		Notes: []string{"Rounds missed: gaps of more than one controller step between a cell's consecutive records. Steps lost: holes in an episode's step numbers and steps missing from an incomplete episode. Stale actions: rounds the controller held because the agent's last recommendation was too old (aware_controller_stale_recommendation_steps_total{cause=\"stale\"}). These three must be 0.",
			"Rounds awaiting the agent's first action: rounds the controller held after the agent entered an acting stage (ONLINE at the first step, or at the hand-over) until the agent runner's first recommendation of that stage ({cause=\"first\"}): the runner's reaction time to a stage change, which the simulator has not (docs/studies.md, Studies on the testbed).",
			"Rounds an applied action stayed in force: rounds the controller kept the agent's applied action while the agent waited for its actuation and a whole step after it ({cause=\"applied\"}): on the cluster an agent acts every two to four steps, on the simulator at every step."}}
	var total testbedrun.Health
	for _, a := range apps {
		for _, arm := range arms {
			res := tb[[2]string{a, arm}]
			var seq []string
			for _, s := range res.Stages {
				reason := s.Reason
				if reason == "" {
					reason = "no Event kept"
				}
				seq = append(seq, fmt.Sprintf("%d: %s → %s (%s)", s.Episode, s.From, s.To, reason))
			}
			life.Rows = append(life.Rows, []string{res.Cell, strings.Join(seq, "; "), simulatorStages(c, arm)})
			h := res.Health
			total = total.Add(h)
			health.Rows = append(health.Rows, []string{res.Cell, fmt.Sprint(h.Records), fmt.Sprint(h.MissedRounds), fmt.Sprint(h.LostSteps), fmt.Sprint(h.StaleActions), fmt.Sprint(h.AwaitingFirst), fmt.Sprint(h.ActionHeld)})
		}
	}
	health.Rows = append(health.Rows, []string{"all", fmt.Sprint(total.Records), fmt.Sprint(total.MissedRounds), fmt.Sprint(total.LostSteps), fmt.Sprint(total.StaleActions), fmt.Sprint(total.AwaitingFirst), fmt.Sprint(total.ActionHeld)})
	rep.Tables = append(rep.Tables, life, health)
	return nil
}

// checkComplete is ErrIncomplete, with the counts, when a testbed cell
// missed a round, lost a step or acted on a stale recommendation.
func checkComplete(c Config, tb map[[2]string]testbedrun.Result) error {
	var total testbedrun.Health
	for _, r := range tb {
		total = total.Add(r.Health)
	}
	if total.Clean() {
		return nil
	}
	return fmt.Errorf("%w: %d rounds missed, %d steps lost, %d stale actions over the testbed cells (report.md's completeness table says where); run at a lower --speedup than %g",
		ErrIncomplete, total.MissedRounds, total.LostSteps, total.StaleActions, c.Testbed.Clock.Speedup)
}

// ErrIncomplete is the error of a study whose testbed cells missed rounds,
// lost steps or acted on stale recommendations: its report is written, but
// its testbed figures are not the system's every round.
var ErrIncomplete = errors.New("bootstrapping: the testbed did not run every round of every cell")

// simulatorStages is the stage sequence the simulator study runs for an
// arm: the hand-over after the records, as the testbed's controller should.
func simulatorStages(c Config, arm string) string {
	switch arm {
	case AWARE:
		return fmt.Sprintf("0: %s → %s; %d: %s → %s", v1alpha1.StageInitialized, v1alpha1.StageOffline, c.Records, v1alpha1.StageOffline, v1alpha1.StageOnline)
	case NoBoot:
		return fmt.Sprintf("0: %s → %s", v1alpha1.StageInitialized, v1alpha1.StageOnline)
	}
	return fmt.Sprintf("0: %s → %s (HPA+VPA acts throughout)", v1alpha1.StageInitialized, v1alpha1.StageOnline)
}
