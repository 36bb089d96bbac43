package bootstrapping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
// quick run fits 20 minutes of wall time on 2 cores beside the serving
// study's cells (3 applications × 3 arms, 30 episodes of 10 steps of 30
// s: 15 minutes at 10×; with serving's 6, 15 MPAs at once: the 2-core
// machine missed 2.4 % of the rounds of 30 MPAs at 10× and 0.65 % of 18
// MPAs' with serving's, docs/studies.md), 10 recorded; the simulator half
// trains BCQ as many updates as the agent runner does on the testbed (2
// per record), and the converged policies as in Quick. Full is 20
// applications, 60 episodes, 20 recorded.
func OnTestbed(full bool) Config {
	c := Config{Apps: 3, Episodes: 30, Records: 10, EpisodeSteps: 10, Converged: 300, Seed: 1}
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
const TestbedFile = lab.TestbedFile

// TestbedWall is the wall time of the study's testbed cells: their
// episodes, and one more for the first stage's, at the clock's step (0
// without a testbed).
func (c Config) TestbedWall() time.Duration {
	if c.Testbed == nil {
		return 0
	}
	return time.Duration((c.Episodes+1)*c.EpisodeSteps) * c.Testbed.Clock.Wall()
}

// cellName is a testbed cell's objects' name.
func cellName(app, arm string) string {
	short := map[string]string{AWARE: "boot", NoBoot: "cold", Rule: "rule", Converged: "conv"}[arm]
	return app + "-" + short
}

// TestbedPart is the study's share of a testbed run: its cells, unless
// o.Dir keeps their results (lab.PlanTestbed).
func TestbedPart(ctx context.Context, o lab.Run, c Config) (lab.TestbedPart, error) {
	if err := c.Validate(); err != nil {
		return lab.TestbedPart{}, err
	}
	if c.Testbed == nil {
		return lab.TestbedPart{}, fmt.Errorf("bootstrapping: not sized for the testbed (OnTestbed)")
	}
	apps, err := c.Draw(o.Lab)
	if err != nil {
		return lab.TestbedPart{}, err
	}
	r := &Runner{Lab: o.Lab, Policies: o.Policies, Config: c}
	return r.testbedPart(ctx, o, apps)
}

func (r *Runner) testbedPart(ctx context.Context, o lab.Run, apps []string) (lab.TestbedPart, error) {
	c := r.Config
	return lab.PlanTestbed(o, Name, c, apps, c.Seed, c.Testbed.Clock, func() ([]testbedrun.Cell, error) { return r.testbedCells(ctx, apps) })
}

// testbedResults are the testbed cells' results kept in dir, by (app, arm).
func (r *Runner) testbedResults(dir string, apps []string) (map[[2]string]testbedrun.Result, error) {
	c := r.Config
	kept, err := lab.TestbedResults(dir, Name, c, apps)
	if err != nil {
		return nil, err
	}
	out := map[[2]string]testbedrun.Result{}
	for _, a := range apps {
		for _, arm := range c.Testbed.Arms {
			name := cellName(a, arm)
			res, ok := kept[name]
			if !ok {
				return nil, fmt.Errorf("bootstrapping: %s: no result of cell %s", filepath.Join(dir, TestbedFile), name)
			}
			out[[2]string{a, arm}] = res
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

// cadence is the arm's lab.Cadence over its cells on the testbed.
func cadence(arm string, apps []string, tb map[[2]string]testbedrun.Result) float64 {
	res := make([]testbedrun.Result, len(apps))
	for i, a := range apps {
		res[i] = tb[[2]string{a, arm}]
	}
	return lab.Cadence(res)
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
	cell := func(app, arm string) testbedrun.Result { return tb[[2]string{app, arm}] }
	tbMeans := func(acting bool) lab.Values {
		from := 0
		if acting {
			from = c.Records
		}
		return lab.TestbedValues(apps, cell, from, c.Episodes, &meansErr)
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
	var results []testbedrun.Result
	for _, a := range apps {
		for _, arm := range arms {
			results = append(results, tb[[2]string{a, arm}])
		}
	}
	sim := map[string]string{}
	for _, a := range apps {
		for _, arm := range arms {
			sim[cellName(a, arm)] = simulatorStages(c, arm)
		}
	}
	rep.Tables = append(rep.Tables, lab.LifecycleTable(results, func(cell string) string { return sim[cell] }), lab.HealthTable(results))
	return nil
}

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
