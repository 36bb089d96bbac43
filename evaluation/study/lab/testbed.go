package lab

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

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// TestbedFile holds a study's testbed cells' results in its folder.
const TestbedFile = "testbed.json"

// testbedRecord is TestbedFile: the configuration the cells ran with, the
// units they ran for and their results, so that a resumed run reuses them
// and a changed one refuses them.
type testbedRecord[C any] struct {
	Config  C                   `json:"config"`
	Apps    []string            `json:"apps"`
	Results []testbedrun.Result `json:"results"`
}

// TestbedPart is one study's share of a testbed run: its cells (none when
// its folder keeps their results already) and where their results go.
// Parts of several studies run together (RunTestbed): one batch of MPAs
// on the testbed, each study's cells timed by the same clock.
type TestbedPart struct {
	Study string
	Seed  uint64
	Clock testbedrun.Clock
	Cells []testbedrun.Cell
	keep  func([]testbedrun.Result) error
}

// Kept says the part's results are in its study's folder already.
func (p TestbedPart) Kept() bool { return p.keep == nil }

// PlanTestbed is a study's part for configuration c and units (the
// record's keys): nothing to run when r.Dir's TestbedFile holds this
// configuration's results, an error when it holds another's or when there
// is no testbed (r.Testbed) to run them on, else the cells from cells,
// whose results RunTestbed writes there.
func PlanTestbed[C any](r Run, name string, c C, units []string, seed uint64, clock testbedrun.Clock, cells func() ([]testbedrun.Cell, error)) (TestbedPart, error) {
	p := TestbedPart{Study: name, Seed: seed, Clock: clock}
	dir := r.Dir
	if _, err := readTestbed(dir, name, c, units); err == nil {
		return p, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return p, err
	}
	if r.Testbed == nil {
		// Before the cells: making them trains and tunes.
		return p, errNoTestbed(name)
	}
	var err error
	if p.Cells, err = cells(); err != nil {
		return p, err
	}
	path := filepath.Join(dir, TestbedFile)
	p.keep = func(res []testbedrun.Result) error {
		b, err := json.MarshalIndent(testbedRecord[C]{Config: c, Apps: units, Results: res}, "", " ")
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := atomicfile.Write(path, b, 0o644); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	return p, nil
}

// RunTestbed runs the cells of the parts not kept yet on r.Testbed, all at
// once (one namespace, one twin: testbedrun.Run), and writes each part's
// results into its study's folder. The parts must share a clock; the
// twin's noise is seeded by the first part's seed.
func RunTestbed(ctx context.Context, r Run, parts ...TestbedPart) error {
	var run []TestbedPart
	var cells []testbedrun.Cell
	var names []string
	for _, p := range parts {
		if p.Kept() {
			continue
		}
		if len(run) > 0 && p.Clock != run[0].Clock {
			return fmt.Errorf("lab: %s runs on %s, %s on %s: studies on one testbed share its clock", run[0].Study, run[0].Clock, p.Study, p.Clock)
		}
		run = append(run, p)
		cells = append(cells, p.Cells...)
		names = append(names, p.Study)
	}
	if len(run) == 0 {
		return nil
	}
	if r.Testbed == nil {
		return errNoTestbed(strings.Join(names, ", "))
	}
	res, err := testbedrun.Run(ctx, r.Testbed, run[0].Clock, cells, testbedrun.Options{Prefix: "aware-study-" + strings.Join(names, "-"),
		Seed: run[0].Seed, Progress: r.Progress})
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(names, ", "), err)
	}
	byCell := map[string]testbedrun.Result{}
	for _, x := range res {
		byCell[x.Cell] = x
	}
	var errs []error
	for _, p := range run {
		mine := make([]testbedrun.Result, 0, len(p.Cells))
		for _, c := range p.Cells {
			mine = append(mine, byCell[c.Name])
		}
		errs = append(errs, p.keep(mine))
	}
	return errors.Join(errs...)
}

// ErrNoTestbed is the error of testbed cells that are not kept and have
// no testbed to run on.
var ErrNoTestbed = errors.New("the study's testbed cells need a testbed (--testbed DIR or --testbed-up)")

func errNoTestbed(names string) error {
	return fmt.Errorf("%s: %w", names, ErrNoTestbed)
}

// TestbedResults are the results dir's TestbedFile keeps for
// configuration c and units, by cell name.
func TestbedResults[C any](dir, name string, c C, units []string) (map[string]testbedrun.Result, error) {
	res, err := readTestbed(dir, name, c, units)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %s holds no testbed cells: the study's testbed cells need a testbed (--testbed DIR or --testbed-up)", name, filepath.Join(dir, TestbedFile))
	}
	return res, err
}

func readTestbed[C any](dir, name string, c C, units []string) (map[string]testbedrun.Result, error) {
	path := filepath.Join(dir, TestbedFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec testbedRecord[C]
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, path, err)
	}
	if !reflect.DeepEqual(rec.Config, c) || !slices.Equal(rec.Apps, units) {
		return nil, fmt.Errorf("%s: %s holds testbed cells of another configuration; use another --out", name, path)
	}
	out := make(map[string]testbedrun.Result, len(rec.Results))
	for _, x := range rec.Results {
		out[x.Cell] = x
	}
	return out, nil
}

// TestbedValues are the testbed cells' means over episodes [from, to) as
// Values: for each unit, the result of (unit, arm) from cell. A cell with
// fewer episodes adds its error to *errp and gives no values.
func TestbedValues(units []string, cell func(unit, arm string) testbedrun.Result, from, to int, errp *error) Values {
	return func(arm string, f Figure) []float64 {
		out := make([]float64, len(units))
		for i, u := range units {
			res := cell(u, arm)
			var cv Curve
			cv.Add(res.Episodes...)
			m, err := cv.Means(from, to)
			if err != nil {
				*errp = errors.Join(*errp, fmt.Errorf("testbed cell %s: %w", res.Cell, err))
				return nil
			}
			out[i] = f.Of(m)
		}
		return out
	}
}

// Cadence is how many controller steps an agent's action stayed in force
// on the testbed, over an arm's cells: their rounds in an acting stage
// over the agent runner's acting steps in them (testbedrun.Result's
// AgentRounds, less the rounds awaiting the agent's first action, and
// AgentSteps, to the runner's last checkpoint of each agent); 0 when the
// runner checkpointed none of their acting steps (runs whose acting stage
// is shorter than one of the runner's episodes).
func Cadence(results []testbedrun.Result) float64 {
	var rounds, steps int
	for _, res := range results {
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

// LifecycleTable is the stage changes the controller made in each testbed
// cell (its StageChanged Events), beside the simulator's sequence for the
// same cell (simulator).
func LifecycleTable(results []testbedrun.Result, simulator func(cell string) string) study.Table {
	t := study.Table{Title: "Lifecycle on the testbed (the controller's StageChanged Events)", Columns: []string{"cell", "stages (episode: from → to, reason)", "simulator"}}
	for _, res := range results {
		var seq []string
		for _, s := range res.Stages {
			reason := s.Reason
			if reason == "" {
				reason = "no Event kept"
			}
			seq = append(seq, fmt.Sprintf("%d: %s → %s (%s)", s.Episode, s.From, s.To, reason))
		}
		t.Rows = append(t.Rows, []string{res.Cell, strings.Join(seq, "; "), simulator(res.Cell)})
	}
	return t
}

// HealthTable is how completely the system ran the testbed cells, a row
// per cell and their total.
func HealthTable(results []testbedrun.Result) study.Table {
	t := study.Table{Title: "How completely the system ran the testbed cells (from their records in InfluxDB and the controller's counters)", Columns: []string{"cell", "records", "rounds missed", "steps lost", "stale actions", "rounds awaiting the agent's first action", "rounds an applied action stayed in force"},
		Notes: []string{"Rounds missed: gaps of more than one controller step between a cell's consecutive records. Steps lost: holes in an episode's step numbers and steps missing from an incomplete episode. Stale actions: rounds the controller held because the agent's last recommendation was too old (aware_controller_stale_recommendation_steps_total{cause=\"stale\"}). These three must be 0.",
			"Rounds awaiting the agent's first action: rounds the controller held after the agent entered an acting stage (ONLINE or SERVING at the first step, or at a stage change) until the agent runner's first recommendation of that stage ({cause=\"first\"}): the runner's reaction time to a stage change, which the simulator has not (docs/studies.md, Studies on the testbed).",
			"Rounds an applied action stayed in force: rounds the controller kept the agent's applied action while the agent waited for its actuation and a whole step after it ({cause=\"applied\"}): on the cluster an agent acts every two controller steps or more, on the simulator at every step."}}
	var total testbedrun.Health
	row := func(name string, h testbedrun.Health) []string {
		return []string{name, fmt.Sprint(h.Records), fmt.Sprint(h.MissedRounds), fmt.Sprint(h.LostSteps), fmt.Sprint(h.StaleActions), fmt.Sprint(h.AwaitingFirst), fmt.Sprint(h.ActionHeld)}
	}
	for _, res := range results {
		total = total.Add(res.Health)
		t.Rows = append(t.Rows, row(res.Cell, res.Health))
	}
	t.Rows = append(t.Rows, row("all", total))
	return t
}

// ErrIncomplete is the error of a study whose testbed cells missed rounds,
// lost steps or acted on stale recommendations: its report is written, but
// its testbed figures are not the system's every round.
var ErrIncomplete = errors.New("the testbed did not run every round of every cell")

// CheckComplete is ErrIncomplete, with the counts, when a testbed cell of
// results (a study's, by its own key) missed a round, lost a step or
// acted on a stale recommendation.
func CheckComplete[K comparable](name string, results map[K]testbedrun.Result, speedup float64) error {
	var total testbedrun.Health
	for _, r := range results {
		total = total.Add(r.Health)
	}
	if total.Clean() {
		return nil
	}
	return fmt.Errorf("%s: %w: %d rounds missed, %d steps lost, %d stale actions over the testbed cells (report.md's completeness table says where); run at a lower --speedup than %g",
		name, ErrIncomplete, total.MissedRounds, total.LostSteps, total.StaleActions, speedup)
}
