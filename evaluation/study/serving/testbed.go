package serving

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

	"github.com/aware-autoscaler/aware/controller/agents"
	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/internal/atomicfile"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// Testbed is the part of the study that runs on the testbed: its arms run
// as MPAs through the controller, the agent runner, Prometheus and
// InfluxDB, on Clock, and the same cells run on the simulator beside them.
type Testbed struct {
	Clock testbedrun.Clock
	// Arms run on the testbed (the converged arm changes its policy at the
	// switch, which the agent runner does not do for an MPA it hosts).
	Arms []string
}

// TestbedArms are the arms that run on the testbed.
var TestbedArms = []string{AWARE, NoRetrain, Rule}

// OnTestbed is the study's size on the testbed: short episodes so that a
// quick run fits 20 minutes of wall time beside the bootstrapping study's
// cells on a 2-core machine (an application under each of the two load
// scenarios × 3 arms, 5 episodes of 10 steps of 30 s before the switch
// and 15 after: 10 minutes at 10×; 18 MPAs with bootstrapping's, the most
// measured to run every round at 10×); the policies converged as in
// Quick. Full is 4 applications under each, 10 episodes before and 30
// after, policies as in Full.
func OnTestbed(full bool) Config {
	c := Quick()
	c.Apps, c.Before, c.After = 1, 5, 15
	if full {
		c = Full()
		c.Apps, c.Before, c.After = 4, 10, 30
	}
	c.Scenarios = []string{"load-high", "load-low"}
	c.EpisodeSteps = 10
	c.Testbed = &Testbed{Clock: testbedrun.DefaultClock(), Arms: slices.Clone(TestbedArms)}
	return c
}

// TestbedWall is the wall time of the study's testbed cells: their
// episodes, and one more for the first stage's, at the clock's step (0
// without a testbed).
func (c Config) TestbedWall() time.Duration {
	if c.Testbed == nil {
		return 0
	}
	return time.Duration((c.Before+c.After+1)*c.EpisodeSteps) * c.Testbed.Clock.Wall()
}

// cellName is a testbed cell's objects' name.
func cellName(u Unit, arm string) string {
	short := map[string]string{AWARE: "aware", NoRetrain: "frozen", Rule: "rule", Converged: "conv"}[arm]
	return u.App + "-" + u.Scenario + "-" + short
}

// unitKey is a unit's key in the testbed's record.
func unitKey(u Unit) string { return u.App + "/" + u.Scenario }

func unitKeys(units []Unit) []string {
	out := make([]string, len(units))
	for i, u := range units {
		out[i] = unitKey(u)
	}
	return out
}

// TestbedPart is the study's share of a testbed run: its cells, unless
// o.Dir keeps their results (lab.PlanTestbed).
func TestbedPart(ctx context.Context, o lab.Run, c Config) (lab.TestbedPart, error) {
	if err := c.Validate(); err != nil {
		return lab.TestbedPart{}, err
	}
	if c.Testbed == nil {
		return lab.TestbedPart{}, errors.New("serving: not sized for the testbed (OnTestbed)")
	}
	units, err := c.Draw(o.Lab)
	if err != nil {
		return lab.TestbedPart{}, err
	}
	r := &Runner{Lab: o.Lab, Policies: o.Policies, Config: c}
	return r.testbedPart(ctx, o, units)
}

func (r *Runner) testbedPart(ctx context.Context, o lab.Run, units []Unit) (lab.TestbedPart, error) {
	c := r.Config
	return lab.PlanTestbed(o, Name, c, unitKeys(units), c.Seed, c.Testbed.Clock, func() ([]testbedrun.Cell, error) { return r.testbedCells(ctx, units) })
}

// testbedResults are the testbed cells' results kept in dir, by (unit
// key, arm).
func (r *Runner) testbedResults(dir string, units []Unit) (map[[2]string]testbedrun.Result, error) {
	c := r.Config
	kept, err := lab.TestbedResults(dir, Name, c, unitKeys(units))
	if err != nil {
		return nil, err
	}
	out := map[[2]string]testbedrun.Result{}
	for _, u := range units {
		for _, arm := range c.Testbed.Arms {
			name := cellName(u, arm)
			res, ok := kept[name]
			if !ok {
				return nil, fmt.Errorf("serving: %s: no result of cell %s", filepath.Join(dir, lab.TestbedFile), name)
			}
			out[[2]string{unitKey(u), arm}] = res
		}
	}
	return out, nil
}

// testbedCells are the study's cells as MPAs: each unit once per arm,
// under its own name, the scenario injected into the twin's application
// as episode Before begins. AWARE and no-retraining are MPAs naming the
// agent runner, whose agent starts from the policy converged on the
// application (an initial policy) and starts SERVING (the profile's
// startServing): AWARE with the detector's thresholds relative to the
// policy's reference reward, as on the simulator, no-retraining with
// thresholds that cannot be crossed. rule-based is the MPA's own HPA+VPA
// at the tuned CPU target.
func (r *Runner) testbedCells(ctx context.Context, units []Unit) ([]testbedrun.Cell, error) {
	c, l := r.Config, r.Lab
	var cells []testbedrun.Cell
	for _, u := range units {
		app, _, err := l.App(u.App)
		if err != nil {
			return nil, err
		}
		tw, err := l.SimAt(u.App, c.Testbed.Clock.TwinSimStep())
		if err != nil {
			return nil, err
		}
		tuned, err := l.CPUTarget(ctx, u.App)
		if err != nil {
			return nil, err
		}
		sc, err := sim.ParseScenario(u.Scenario)
		if err != nil {
			return nil, err
		}
		ref, ag, err := r.converged(ctx, u.App, c.Seed)
		if err != nil {
			return nil, err
		}
		for _, arm := range c.Testbed.Arms {
			cell := testbedrun.Cell{Name: cellName(u, arm), App: app, Sim: tw, Recommender: testbedrun.AgentName,
				CPUTarget: tuned.Target, Episodes: c.Before + c.After, Scenario: sc, InjectAfter: c.Before}
			var th v1alpha1.RewardThresholds
			switch arm {
			case AWARE:
				th = c.thresholds(ref)
			case NoRetrain:
				th = c.frozen()
			case Rule:
				cell.Recommender = v1alpha1.DefaultRecommenderName
				th = c.never()
			default:
				return nil, fmt.Errorf("serving: arm %s does not run on the testbed (it runs %s)", arm, strings.Join(TestbedArms, ", "))
			}
			serve := cell.Recommender == testbedrun.AgentName
			cell.Profile = func(p *v1alpha1.AgentProfile) {
				p.EpisodeLength = c.EpisodeSteps
				p.Bootstrap = ptr(false)
				p.StartServing = serve
				p.Thresholds = th
			}
			if serve {
				cell.Policy = &testbedrun.Policy{Agent: ag, Kind: agents.KindDDPG, Mapping: l.Config().Mapping}
			}
			cells = append(cells, cell)
		}
	}
	return cells, nil
}

func ptr[T any](v T) *T { return &v }

// Cadence is the simulator's run of the testbed's agent arms as the
// testbed runs them: at the cadence the agents had there, one running
// service (atCadence).
type Cadence struct {
	// Every are the controller steps per agent action on the testbed,
	// by arm, and Acts the whole number the simulator's agent acted at.
	Every map[string]float64 `json:"every"`
	Acts  map[string]int     `json:"acts"`
	// Runs are the runs by unit key and arm ("app/scenario/arm").
	Runs map[string]Run `json:"runs"`
	// Unmeasured are the agent arms whose cadence the run did not
	// measure (lab.Cadence).
	Unmeasured []string `json:"unmeasured,omitempty"`
	// NotRun says a render-only run found no runs kept and ran none.
	NotRun bool `json:"-"`
}

// CadenceFile holds the simulator's runs as on the testbed in the
// study's folder: a report rendered again reuses them.
const CadenceFile = "cadence.json"

// atCadence runs the testbed's agent arms on the simulator again, with
// the cells' seeds and as the testbed runs them: each agent acting (and,
// in ONLINE, learning) at every k-th step only, k the arm's cadence on
// the testbed rounded, the allocation held in between, and the episodes
// windows of one running service, never reset (the study's simulator
// cells reset the allocation and the load's point at every episode).
func (r *Runner) atCadence(ctx context.Context, dir string, render bool, units []Unit, tb map[[2]string]testbedrun.Result) (Cadence, error) {
	c, l := r.Config, r.Lab
	out := Cadence{Every: map[string]float64{}, Acts: map[string]int{}, Runs: map[string]Run{}}
	var arms []string
	for _, arm := range c.Testbed.Arms {
		if arm == Rule {
			continue
		}
		res := make([]testbedrun.Result, len(units))
		for i, u := range units {
			res[i] = tb[[2]string{unitKey(u), arm}]
		}
		k := lab.Cadence(res)
		if k == 0 {
			out.Unmeasured = append(out.Unmeasured, arm)
			continue
		}
		arms = append(arms, arm)
		out.Every[arm], out.Acts[arm] = k, max(1, int(math.Round(k)))
	}
	var want []string
	for _, u := range units {
		for _, arm := range arms {
			want = append(want, unitKey(u)+"/"+arm)
		}
	}
	slices.Sort(want)
	path := filepath.Join(dir, CadenceFile)
	var kept Cadence
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &kept) == nil && maps.Equal(kept.Acts, out.Acts) &&
		slices.Equal(slices.Sorted(maps.Keys(kept.Runs)), want) {
		out.Runs = kept.Runs
		return out, nil
	}
	if render && len(arms) > 0 {
		// Rendering runs no cell: without the runs kept, the table is left
		// out.
		out.Unmeasured, out.Every, out.Acts = append(out.Unmeasured, arms...), map[string]float64{}, map[string]int{}
		out.NotRun = true
		return out, nil
	}
	for _, u := range units {
		sc, err := sim.ParseScenario(u.Scenario)
		if err != nil {
			return Cadence{}, err
		}
		for _, arm := range arms {
			ref, ag, err := r.converged(ctx, u.App, c.Seed)
			if err != nil {
				return Cadence{}, err
			}
			env, err := l.Env(u.App, 0, c.envOptions()...)
			if err != nil {
				return Cadence{}, err
			}
			run, err := r.agentArm(ctx, study.Cell{Arm: arm, App: u.App, Scenario: u.Scenario, Seed: c.Seed}, env, c.hitter(env, sc), ref, ag,
				asRun{every: out.Acts[arm], continuous: true})
			if err != nil {
				return Cadence{}, fmt.Errorf("serving: %s under %s, %s run as on the testbed: %w", u.App, u.Scenario, arm, err)
			}
			run.Reference = ref
			out.Runs[unitKey(u)+"/"+arm] = run
		}
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return Cadence{}, fmt.Errorf("serving: %w", err)
	}
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return Cadence{}, fmt.Errorf("serving: %w", err)
	}
	return out, nil
}

// testbedReport adds the testbed's tables to the simulator's report: per
// arm after the switch, testbed against simulator for the same cells, the
// lifecycle the controller ran, where the scenario hit and how completely
// the system ran the cells.
func testbedReport(rep *study.Report, c Config, plan study.Plan, runs []Run, units []Outcome, tb map[[2]string]testbedrun.Result, cad Cadence, bs study.Bootstrap) error {
	keys := make([]string, len(units))
	for i, u := range units {
		keys[i] = unitKey(Unit{App: u.App, Scenario: u.Scenario})
	}
	arms := c.Testbed.Arms
	clock := c.Testbed.Clock
	rep.Paragraphs = append(rep.Paragraphs, fmt.Sprintf("Where each cell ran: the arms %s ran twice, on the simulator and on the testbed, where each (application, scenario, arm) was an MPA of its own on the local testbed's control plane, stepped by the MPA controller, its agent hosted by the agent runner and started from the policy converged on the simulator (an initial policy, SERVING from the first step: the profile's startServing), its metrics read through Prometheus from a digital twin of the application playing the same load shape, into which the scenario was injected as the cell's episode %d began, its steps recorded in the testbed's InfluxDB, from which every testbed figure below is read; the stage changes are the controller's own (its StageChanged Events). Clock: %s. Episodes of %d steps on both; the detector's reference is the policy's greedy reward over episodes of that length.",
		strings.Join(arms, ", "), c.Before+1, clock, c.EpisodeSteps))
	var meansErr error
	cell := func(key, arm string) testbedrun.Result { return tb[[2]string{key, arm}] }
	t, _, err := lab.Comparison(fmt.Sprintf("Testbed vs simulator, the %d episodes after the switch", c.After), arms, lab.Figures, bs,
		lab.TestbedValues(keys, cell, c.Before, c.Before+c.After, &meansErr), valuesOf(units))
	if err := errors.Join(meansErr, err); err != nil {
		return err
	}
	rep.Tables = append(rep.Tables, t)
	t, _, err = lab.Comparison(fmt.Sprintf("Testbed vs simulator, the %d episodes before the switch", c.Before), arms, lab.Figures, bs,
		lab.TestbedValues(keys, cell, 0, c.Before, &meansErr), beforeValues(c, plan, runs, units, &meansErr))
	if err := errors.Join(meansErr, err); err != nil {
		return err
	}
	rep.Tables = append(rep.Tables, t)
	if err := cadenceReport(rep, c, keys, cad, bs, lab.TestbedValues(keys, cell, c.Before, c.Before+c.After, &meansErr)); err != nil {
		return errors.Join(meansErr, err)
	}

	var results []testbedrun.Result
	sim := map[string]string{}
	hit := study.Table{Title: "Where the scenario hit on the testbed", Columns: []string{"cell", "first step after the injection (episode.step, from 1)", "simulator"},
		Notes: []string{"The study injects the scenario into the twin's application as soon as the record that completes the cell's episode " + fmt.Sprint(c.Before) + " is stored (it reads the cell's records every half step until then): the step shown is the first whose reward the scenario can have changed. On the simulator the scenario hits before the first step of that episode."}}
	for i, u := range units {
		for _, arm := range arms {
			res := tb[[2]string{keys[i], arm}]
			results = append(results, res)
			sim[res.Cell] = simulatorStages(c, plan, runs, u, arm)
			if run, ok := cad.Runs[keys[i]+"/"+arm]; ok && arm == AWARE {
				sim[res.Cell] += "; run as the testbed runs it: " + stageSequence(run.Stages)
			}
			at := "not recorded"
			if p := res.Injected; p != nil {
				at = fmt.Sprintf("%d.%d", p.Episode+1, p.Step+1)
			}
			hit.Rows = append(hit.Rows, []string{res.Cell, at, fmt.Sprintf("%d.1", c.Before+1)})
		}
	}
	rep.Tables = append(rep.Tables, lab.LifecycleTable(results, func(cell string) string { return sim[cell] }), hit, lab.HealthTable(results))
	return nil
}

// beforeValues are the simulator cells' means over the episodes before
// the switch, by unit; what is missing goes to *errp.
func beforeValues(c Config, plan study.Plan, runs []Run, units []Outcome, errp *error) lab.Values {
	return func(arm string, f lab.Figure) []float64 {
		out := make([]float64, len(units))
		for i, u := range units {
			j := slices.IndexFunc(plan, func(x study.Cell) bool { return x.App == u.App && x.Scenario == u.Scenario && x.Arm == arm })
			if j < 0 {
				*errp = errors.Join(*errp, fmt.Errorf("serving: no simulator cell %s %s %s", u.App, u.Scenario, arm))
				return nil
			}
			m, err := runs[j].Means(0, c.Before)
			if err != nil {
				*errp = errors.Join(*errp, fmt.Errorf("serving: simulator cell %s: %w", plan[j].Key(), err))
				return nil
			}
			out[i] = f.Of(m)
		}
		return out
	}
}

// simulatorStages is the stage sequence the simulator ran for the unit's
// arm: AWARE's from its run, the frozen arms' SERVING throughout.
func simulatorStages(c Config, plan study.Plan, runs []Run, u Outcome, arm string) string {
	switch arm {
	case Rule:
		return fmt.Sprintf("0: %s → %s (HPA+VPA acts throughout)", v1alpha1.StageInitialized, v1alpha1.StageOnline)
	case NoRetrain:
		return fmt.Sprintf("0: %s → %s", v1alpha1.StageInitialized, v1alpha1.StageServing)
	}
	j := slices.IndexFunc(plan, func(x study.Cell) bool { return x.App == u.App && x.Scenario == u.Scenario && x.Arm == arm })
	if j < 0 {
		return "not run"
	}
	return stageSequence(runs[j].Stages)
}

// stageSequence is a run's stage changes from its stage per episode, as
// the lifecycle table shows them.
func stageSequence(st []string) string {
	seq := []string{fmt.Sprintf("0: %s → %s", v1alpha1.StageInitialized, v1alpha1.StageServing)}
	for e := 1; e < len(st); e++ {
		if st[e] != st[e-1] {
			seq = append(seq, fmt.Sprintf("%d: %s → %s", e, st[e-1], st[e]))
		}
	}
	return strings.Join(seq, "; ")
}

// cadenceReport adds the table of the agent arms run on the simulator as
// the testbed runs them (after the switch), or says why it is not there.
func cadenceReport(rep *study.Report, c Config, keys []string, cad Cadence, bs study.Bootstrap, testbed lab.Values) error {
	var agents, every []string
	for _, arm := range c.Testbed.Arms {
		if k, ok := cad.Every[arm]; ok {
			agents = append(agents, arm)
			n := cad.Acts[arm]
			note := ""
			if c.EpisodeSteps%n != 0 {
				// agentArm runs each episode on its own (the detector
				// decides between episodes): a window cut by an episode's
				// end closes there.
				note = fmt.Sprintf("; %d does not divide the episode's %d steps, so each episode's last window is shorter", n, c.EpisodeSteps)
			}
			every = append(every, fmt.Sprintf("%s %.2f (the simulator's agent acting every %d%s)", arm, k, n, note))
		}
	}
	switch {
	case cad.NotRun:
		rep.Paragraphs = append(rep.Paragraphs, "The agent arms run on the simulator as the testbed runs them are not in this report: it was rendered from the study's folder, which does not hold those runs (cadence.json); running the study again adds them.")
	case len(cad.Unmeasured) > 0:
		rep.Paragraphs = append(rep.Paragraphs, fmt.Sprintf("The agent's cadence on the testbed was not measured for %s: none of their agents has a checkpoint of the agent runner with an acting step.", strings.Join(cad.Unmeasured, ", ")))
	}
	if len(agents) == 0 {
		return nil
	}
	var simErr error
	sim := func(arm string, f lab.Figure) []float64 {
		out := make([]float64, len(keys))
		for i, k := range keys {
			m, err := cad.Runs[k+"/"+arm].Means(c.Before, c.Before+c.After)
			if err != nil {
				simErr = errors.Join(simErr, fmt.Errorf("serving: %s %s run as on the testbed (%s): %w", k, arm, CadenceFile, err))
				return nil
			}
			out[i] = f.Of(m)
		}
		return out
	}
	t, _, err := lab.Comparison(fmt.Sprintf("Testbed vs simulator run as the testbed runs it (the testbed's cadence, one running service), the %d episodes after the switch", c.After), agents, lab.Figures, bs, testbed, sim)
	if err := errors.Join(simErr, err); err != nil {
		return err
	}
	t.Notes = append(t.Notes, fmt.Sprintf("On the testbed an agent's action stays in force for several controller steps (the agent runner observes each action over the first whole step after its actuation, then answers), and the episodes are windows of one running service, where the study's simulator cells act at every step and reset the allocation and the load's point at every episode. Controller steps per agent action on the testbed: %s. The simulator column is these arms run again with the cells' seeds, the agent acting at that cadence, the allocation held in between (train.Config.ActEvery), never reset (train.Config.Continuous), the scenario injected and the detector run as in the study.", strings.Join(every, "; ")))
	rep.Tables = append(rep.Tables, t)
	return nil
}
