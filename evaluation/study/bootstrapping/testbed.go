package bootstrapping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
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

// cadence is how many controller steps an agent arm's action stayed in
// force on the testbed: its cells' rounds in an acting stage over the
// agent runner's acting steps in them (testbedrun.Result.AgentRounds, less
// the rounds awaiting the agent's first action, and AgentSteps, to the
// runner's last checkpoint of each agent); 0 when the
// runner checkpointed none of their acting steps (runs whose acting stage
// is shorter than one of the runner's episodes).
func cadence(arm string, apps []string, tb map[[2]string]testbedrun.Result) float64 {
	var rounds, steps int
	for _, a := range apps {
		res := tb[[2]string{a, arm}]
		if res.AgentSteps > 0 {
			// Not the rounds before the runner's first action of a stage:
			// its reaction to the stage change, which the simulator's
			// cadence does not model (counted over the whole run, where
			// the rounds are those to the checkpoint: at least a round per
			// step is left).
			rounds += max(res.AgentRounds-res.Health.AwaitingFirst, res.AgentSteps)
			steps += res.AgentSteps
		}
	}
	if steps <= 0 {
		return 0
	}
	return float64(rounds) / float64(steps)
}

// Cadence is the simulator's run of the testbed's agent arms as the
// testbed runs them: at the cadence the agents had there, one running
// service (atCadence).
type Cadence struct {
	// Every are the controller steps per agent action on the testbed,
	// by arm, and Acts the whole number the simulator's agent acted at.
	Every map[string]float64 `json:"every"`
	Acts  map[string]int     `json:"acts"`
	Outs  []Outcome          `json:"outcomes"`
	// Unmeasured are the agent arms whose cadence the run did not measure
	// (cadence).
	Unmeasured []string `json:"unmeasured,omitempty"`
	// Continuous says the runs' episodes were one running service
	// (train.Config.Continuous; asTestbed).
	Continuous bool `json:"continuous"`
	// NotRun says a render-only run found no runs kept and ran none.
	NotRun bool `json:"-"`
}

// asTestbed is whether atCadence runs the agent arms as one running
// service, as the testbed does (the runs kept say which they were).
const asTestbed = true

// CadenceFile holds the simulator's runs as on the testbed in the
// study's folder: a report rendered again reuses them.
const CadenceFile = "cadence.json"

// atCadence runs the testbed's agent arms on the simulator again, with the
// cells' seeds and as the testbed runs them: each agent acting (and
// learning) at every k-th step only, k the arm's cadence on the testbed
// rounded, the allocation held in between, and the episodes windows of
// one running service, never reset (on the testbed an episode starts
// with the allocation and load the last one left; on the simulator the
// study resets both at every episode): how much of the testbed's
// difference from the simulator these two account for.
func (r *Runner) atCadence(ctx context.Context, dir string, render bool, apps []string, tb map[[2]string]testbedrun.Result) (Cadence, error) {
	c, l := r.Config, r.Lab
	out := Cadence{Every: map[string]float64{}, Acts: map[string]int{}, Continuous: asTestbed}
	var arms []string
	for _, arm := range c.Testbed.Arms {
		if arm == Rule {
			continue
		}
		k := cadence(arm, apps, tb)
		if k == 0 {
			out.Unmeasured = append(out.Unmeasured, arm)
			continue
		}
		arms = append(arms, arm)
		out.Every[arm], out.Acts[arm] = k, max(1, int(math.Round(k)))
	}
	path := filepath.Join(dir, CadenceFile)
	var kept Cadence
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &kept) == nil && maps.Equal(kept.Acts, out.Acts) && kept.Continuous == out.Continuous &&
		slices.EqualFunc(kept.Outs, apps, func(o Outcome, app string) bool { return o.App == app }) {
		out.Outs = kept.Outs
		return out, nil
	}
	if render && len(arms) > 0 {
		// Rendering runs no cell: without the runs kept, the table is left
		// out.
		out.Unmeasured, out.Every, out.Acts = append(out.Unmeasured, arms...), map[string]float64{}, map[string]int{}
		out.NotRun = true
		return out, nil
	}
	for _, app := range apps {
		o := Outcome{App: app, All: map[string]lab.Means{}, Acting: map[string]lab.Means{}}
		for _, arm := range arms {
			env, err := l.Env(app, 0, c.envOptions()...)
			if err != nil {
				return Cadence{}, err
			}
			eps, err := r.agentArm(ctx, app, arm, env, c.Seed+cellSeed, asRun{every: out.Acts[arm], continuous: asTestbed})
			if err != nil {
				return Cadence{}, fmt.Errorf("bootstrapping: %s %s run as on the testbed: %w", app, arm, err)
			}
			var cv lab.Curve
			cv.Add(eps...)
			if o.All[arm], err = cv.Means(0, c.Episodes); err != nil {
				return Cadence{}, err
			}
			if o.Acting[arm], err = cv.Means(c.Records, c.Episodes); err != nil {
				return Cadence{}, err
			}
		}
		out.Outs = append(out.Outs, o)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return Cadence{}, fmt.Errorf("bootstrapping: %w", err)
	}
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return Cadence{}, fmt.Errorf("bootstrapping: %w", err)
	}
	return out, nil
}

// testbedReport adds the testbed's tables to the simulator's report: per
// arm on the testbed, testbed against simulator for the same cells, the
// lifecycle the controller ran and how completely the system ran them.
func testbedReport(rep *study.Report, c Config, outs []Outcome, tb map[[2]string]testbedrun.Result, cad Cadence, bs study.Bootstrap) error {
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
	var agents []string
	var every []string
	for _, arm := range arms {
		if k, ok := cad.Every[arm]; ok {
			agents = append(agents, arm)
			every = append(every, fmt.Sprintf("%s %.2f (the simulator's agent acting every %d)", arm, k, cad.Acts[arm]))
		}
	}
	if len(agents) > 0 {
		t, _, err := lab.Comparison(fmt.Sprintf("Testbed vs simulator run as the testbed runs it (the testbed's cadence, one running service), episodes %d–%d", c.Records+1, c.Episodes), agents, lab.Figures, bs, tbMeans(true), valuesOf(cad.Outs, true))
		if err := errors.Join(meansErr, err); err != nil {
			return err
		}
		t.Notes = append(t.Notes, fmt.Sprintf("Two things the study's simulator cells do not do as the testbed does. On the testbed an agent's action stays in force for several controller steps: the agent runner observes each action over the first whole step after its actuation and then needs a round to answer (controller/mpaenv), and the controller holds the action meanwhile; controller steps per agent action on the testbed, over the acting stages: %s. And the testbed's episodes are windows of one running service: an episode starts with the allocation (and the point of the load) the last one left, where the study's simulator resets both at every episode, so an agent's drift builds up over episodes on the testbed only. The simulator column is these arms run again with the cells' seeds, the agent acting at that cadence, the allocation held in between, learning one transition per action that ends in the state it acts from next (train.Config.ActEvery), and never reset (train.Config.Continuous): what of the testbed's difference from the simulator these two account for.", strings.Join(every, "; ")))
		rep.Tables = append(rep.Tables, t)
	}
	switch {
	case cad.NotRun:
		rep.Paragraphs = append(rep.Paragraphs, "The agent arms run on the simulator as the testbed runs them are not in this report: it was rendered from the study's folder, which does not hold those runs (cadence.json); running the study again adds them.")
	case len(cad.Unmeasured) > 0:
		rep.Paragraphs = append(rep.Paragraphs, fmt.Sprintf("The agent's cadence on the testbed was not measured for %s: none of their agents has a checkpoint of the agent runner with an acting step (an acting stage shorter than one of the runner's episodes, or a testbed without the runner's checkpoint folder in its endpoints).", strings.Join(cad.Unmeasured, ", ")))
	}
	life := study.Table{Title: "Lifecycle on the testbed (the controller's StageChanged Events)", Columns: []string{"cell", "stages (episode: from → to, reason)", "simulator"}}
	health := study.Table{Title: "How completely the system ran the testbed cells (from their records in InfluxDB and the controller's counters)", Columns: []string{"cell", "records", "rounds missed", "steps lost", "stale actions", "rounds awaiting the agent's first action", "rounds an applied action stayed in force"},
		Notes: []string{"Rounds missed: gaps of more than one controller step between a cell's consecutive records. Steps lost: holes in an episode's step numbers and steps missing from an incomplete episode. Stale actions: rounds the controller held because the agent's last recommendation was too old (aware_controller_stale_recommendation_steps_total{cause=\"stale\"}). These three must be 0.",
			"Rounds awaiting the agent's first action: rounds the controller held after the agent entered an acting stage (ONLINE at the first step, or at the hand-over) until the agent runner's first recommendation of that stage ({cause=\"first\"}): the runner's reaction time to a stage change, which the simulator has not (docs/studies.md, Studies on the testbed).",
			"Rounds an applied action stayed in force: rounds the controller kept the agent's applied action while the agent waited for its actuation and a whole step after it ({cause=\"applied\"}): on the cluster an agent acts every two controller steps or more (its measured cadence is under the cadence table), on the simulator at every step."}}
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
