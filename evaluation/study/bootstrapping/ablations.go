package bootstrapping

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aware-autoscaler/aware/controller/bootstrap"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ppo"
	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// The extra arms (Config.Extra): ablations of the bootstrapping route,
// each on the same episodes as the study's own arms. BCQArm names the
// others.
const (
	// OfflineDDPG is plain DDPG trained offline on the same records as
	// AWARE-bootstrapped's BCQ, then acting and training online: what BCQ
	// guards against (extrapolation error).
	OfflineDDPG = "offline-DDPG"
	// PPO is a fresh PPO agent (Gaussian head) acting and training from
	// the first episode.
	PPO = "PPO"
	// PPOFitted is PPO's route: OFFLINE as AWARE-bootstrapped, a
	// simulator of the application fitted from the recorded metrics
	// (sim.Fit) in which a fresh PPO agent trains Config.SimEpisodes
	// episodes (random start points in the recorded load), then acting and
	// training online.
	PPOFitted = "PPO-fitted"

	bcqPrefix = "BCQ-phi"
)

// BCQArm is the extra arm of BCQ with perturbation bound phi, trained on
// the records as AWARE-bootstrapped's (whose Φ is Config.Phi).
func BCQArm(phi float64) string { return bcqPrefix + strconv.FormatFloat(phi, 'g', -1, 64) }

// Ablations are the arms of the removed `aware bootstrap` that the study
// does not run itself (its BCQ Φ = 0 is AWARE-bootstrapped): the paper's
// Φ, plain DDPG on the records, PPO fresh and from the fitted simulator.
// "all" in WithArms.
var Ablations = []string{BCQArm(0.05), OfflineDDPG, PPO, PPOFitted}

// DefaultSimEpisodes are the PPOFitted arm's episodes in the fitted
// simulator unless given (the removed `aware bootstrap`'s).
const DefaultSimEpisodes = 1500

// WithArms is c with the extra arms named (BCQArm's names, OfflineDDPG,
// PPO, PPOFitted; "all" for Ablations) and, with PPOFitted, simEpisodes
// episodes in the fitted simulator (0: DefaultSimEpisodes).
func (c Config) WithArms(arms []string, simEpisodes int) (Config, error) {
	for _, a := range arms {
		if a == "all" {
			c.Extra = append(c.Extra, Ablations...)
		} else {
			c.Extra = append(c.Extra, a)
		}
	}
	switch {
	case slices.Contains(c.Extra, PPOFitted):
		c.SimEpisodes = simEpisodes
		if simEpisodes == 0 {
			c.SimEpisodes = DefaultSimEpisodes
		}
	case simEpisodes != 0:
		return c, fmt.Errorf("bootstrapping: %d episodes in the fitted simulator: only the %s arm trains in one", simEpisodes, PPOFitted)
	}
	return c, c.Validate()
}

// parseExtra reads an extra arm's name: its kind (bcqPrefix for BCQ) and
// BCQ's Φ.
func parseExtra(name string) (kind string, phi float64, err error) {
	switch name {
	case OfflineDDPG, PPO, PPOFitted:
		return name, 0, nil
	}
	if s, ok := strings.CutPrefix(name, bcqPrefix); ok {
		phi, err := strconv.ParseFloat(s, 64)
		if err == nil && phi >= 0 && phi <= 2 && BCQArm(phi) == name {
			return bcqPrefix, phi, nil
		}
		return "", 0, fmt.Errorf("bootstrapping: arm %q: BCQ's perturbation bound Φ is a number in [0, 2], written as %s0.05", name, bcqPrefix)
	}
	return "", 0, fmt.Errorf("bootstrapping: no arm %q (extra arms: %sΦ such as %s, %s, %s, %s; all)", name, bcqPrefix, BCQArm(0.05), OfflineDDPG, PPO, PPOFitted)
}

// validateExtra refuses unknown or repeated extra arms and a simulator
// budget without the arm that uses it.
func (c Config) validateExtra() error {
	seen := map[string]bool{}
	for _, a := range Arms {
		seen[a] = true
	}
	for _, a := range c.Extra {
		if _, _, err := parseExtra(a); err != nil {
			return err
		}
		if seen[a] {
			return fmt.Errorf("bootstrapping: arm %s given twice", a)
		}
		seen[a] = true
	}
	if fitted := seen[PPOFitted]; fitted && c.SimEpisodes < 1 || !fitted && c.SimEpisodes != 0 {
		return fmt.Errorf("bootstrapping: %d episodes in the fitted simulator: positive with the %s arm, none without", c.SimEpisodes, PPOFitted)
	}
	return nil
}

// extraCost is the single-core time of one application's extra arms at
// lab.Pace (PPO at DDPG's pace).
func (c Config) extraCost() time.Duration {
	p := lab.Pace
	var d time.Duration
	for _, a := range c.Extra {
		kind, _, _ := parseExtra(a)
		d += time.Duration(c.Episodes) * p.DDPG
		switch kind {
		case bcqPrefix, OfflineDDPG:
			d += time.Duration(c.Updates) * time.Millisecond
		case PPOFitted:
			d += time.Duration(c.SimEpisodes) * p.DDPG
		}
	}
	return d
}

// Fit is the PPOFitted arm's simulator: its error on the held-back
// records, the model the agent trained in, the true model's CPU per
// request and isolated p99 beside it, and the agent's episodes in it.
type Fit struct {
	// HeldBack is the error of a fit on the records' first four fifths on
	// their last fifth; a part with no usable step is 0 over 0 rows (JSON
	// holds no NaN).
	HeldBack sim.FitError `json:"heldBack"`
	// Fitted is the fit on all the records, the agent's simulator.
	Fitted           sim.Fitted `json:"fitted"`
	TrueCPU          float64    `json:"trueCPUPerRequest"`
	TrueP99          float64    `json:"trueIsolatedP99"`
	SimRewards       []float64  `json:"simRewards"`
	SimSLOViolations []int      `json:"simSloViolations"`
}

// extra runs an extra arm's cell on env, the cell's application.
func (r *Runner) extra(ctx context.Context, c study.Cell, env *sim.AppEnv, seed uint64) (Run, error) {
	kind, phi, err := parseExtra(c.Arm)
	if err != nil {
		return Run{}, err
	}
	cfg, l := r.Config, r.Lab
	m := l.Config().Mapping
	rnd := func(i uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, i)) }
	var out Run
	offline := func(ag agent.Agent) func([]agent.Transition, []gym.Metrics) (agent.Agent, error) {
		return func(steps []agent.Transition, _ []gym.Metrics) (agent.Agent, error) {
			st, err := bootstrap.Offline(ctx, ag, steps, cfg.Updates, nil)
			if err != nil {
				return nil, fmt.Errorf("offline training: %w", err)
			}
			out.OfflineMeanQ = st.MeanQ
			return ag, nil
		}
	}
	var eps []train.Episode
	switch kind {
	case bcqPrefix:
		ag, err := bootstrap.New(gym.StateDim, gym.ActDim, rnd(2), bootstrap.WithPhi(phi))
		if err != nil {
			return Run{}, err
		}
		eps, err = r.handover(ctx, c.App, env, seed, asRun{}, offline(ag))
		if err != nil {
			return Run{}, err
		}
	case OfflineDDPG:
		ag, err := l.NewDDPG(gym.StateDim, seed+3)
		if err != nil {
			return Run{}, err
		}
		if eps, err = r.handover(ctx, c.App, env, seed, asRun{}, offline(ag)); err != nil {
			return Run{}, err
		}
	case PPO:
		ag, err := ppo.NewContinuous(gym.StateDim, gym.ActDim, rnd(4))
		if err != nil {
			return Run{}, err
		}
		if eps, err = train.Run(ctx, env, ag, train.Config{Episodes: cfg.Episodes, Seed: seed, Explore: true, Mapping: m}); err != nil {
			return Run{}, err
		}
	case PPOFitted:
		_, sa, err := l.App(c.App)
		if err != nil {
			return Run{}, err
		}
		eps, err = r.handover(ctx, c.App, env, seed, asRun{}, func(_ []agent.Transition, metrics []gym.Metrics) (agent.Agent, error) {
			fit, fitEnv, err := fittedSimulator(l.Profile(), sa, env.Cluster().Model(0), metrics, l.Config().Step)
			if err != nil {
				return nil, err
			}
			ag, err := ppo.NewContinuous(gym.StateDim, gym.ActDim, rnd(5))
			if err != nil {
				return nil, err
			}
			simEps, err := train.Run(ctx, fitEnv, ag, train.Config{Episodes: cfg.SimEpisodes, Seed: seed + 7_000, Explore: true, Mapping: m})
			if err != nil {
				return nil, fmt.Errorf("in the fitted simulator: %w", err)
			}
			for _, e := range simEps {
				fit.SimRewards = append(fit.SimRewards, e.Reward)
				fit.SimSLOViolations = append(fit.SimSLOViolations, e.SLOViolations)
			}
			out.Fit = fit
			return ag, nil
		})
		if err != nil {
			return Run{}, err
		}
	}
	out.Add(eps...)
	return out, nil
}

// fittedSimulator fits a simulator of application sa from metrics, the
// steps of its records: first on their first four fifths, measured on the
// last fifth, then on all of them for the environment returned (random
// start points in the recorded load). truth is sa's true model, reported
// beside the fit.
func fittedSimulator(prof *calibration.Profile, sa sim.App, truth sim.Model, metrics []gym.Metrics, step time.Duration) (*Fit, gym.Env, error) {
	cut := len(metrics) * 4 / 5
	part, err := sim.Fit(metrics[:cut], sa.Concurrency, step)
	if err != nil {
		return nil, nil, fmt.Errorf("fit on the first %d of %d recorded steps: %w", cut, len(metrics), err)
	}
	f, err := sim.Fit(metrics, sa.Concurrency, step)
	if err != nil {
		return nil, nil, fmt.Errorf("fit on the %d recorded steps: %w", len(metrics), err)
	}
	arrivals := make([]float64, len(metrics))
	for i, m := range metrics {
		arrivals[i] = m.ArrivalRate
	}
	app, err := f.App(sa.Name+"-fitted", sa.SLO, arrivals, sa.Initial)
	if err != nil {
		return nil, nil, err
	}
	env, err := sim.NewEnv(prof, app, append(f.Options(), sim.WithStep(step), sim.WithRandomStart())...)
	if err != nil {
		return nil, nil, err
	}
	e := part.Error(metrics[cut:], step)
	if e.CPURows == 0 {
		e.CPU = 0
	}
	if e.MemoryRows == 0 {
		e.Memory = 0
	}
	if e.LatencyRows == 0 {
		e.LatencyP50, e.LatencyP95, e.LatencyP99 = 0, 0, 0
	}
	return &Fit{HeldBack: e, Fitted: f, TrueCPU: truth.CPU, TrueP99: truth.P99}, env, nil
}

// switchEpisode is the index of an arm's first acting episode: after the
// records for the arms that bootstrap, the first for those that start
// cold (-1: the arm does not switch).
func (c Config) switchEpisode(arm string) int {
	switch arm {
	case Rule, Converged:
		return -1
	case NoBoot, PPO:
		return 0
	}
	return c.Records
}

// ablationTables are the report's tables on the extra arms: T_online
// against every arm's first acting episode with the offline critics, and
// the fitted simulators.
func ablationTables(c Config, plan study.Plan, runs []Run, bs study.Bootstrap) ([]study.Table, error) {
	byApp := map[string]map[string]Run{}
	var apps []string
	for i, cell := range plan {
		if byApp[cell.App] == nil {
			byApp[cell.App] = map[string]Run{}
			apps = append(apps, cell.App)
		}
		byApp[cell.App][cell.Arm] = runs[i]
	}
	values := func(f func(map[string]Run) float64) []float64 {
		out := make([]float64, len(apps))
		for i, a := range apps {
			out[i] = f(byApp[a])
		}
		return out
	}
	tOnline, err := bs.Mean(values(func(rs map[string]Run) float64 {
		rule, _ := rs[Rule].Means(0, c.Records)
		return rule.Reward
	}))
	if err != nil {
		return nil, err
	}
	t := study.Table{Title: "At the switch: each arm's first acting episode against T_online, mean [95 % CI] over applications",
		Columns: []string{"arm", "first acting episode", "reward", "SLO violations", "offline critic's mean Q of the recorded actions"}}
	t.Rows = append(t.Rows, []string{fmt.Sprintf("T_online: %s over the %d recorded episodes", Rule, c.Records), "–", tOnline.String(), "–", "–"})
	for _, arm := range c.AllArms() {
		k := c.switchEpisode(arm)
		if k < 0 {
			continue
		}
		rew, err := bs.Mean(values(func(rs map[string]Run) float64 { return rs[arm].Rewards[k] }))
		if err != nil {
			return nil, err
		}
		vio, err := bs.Mean(values(func(rs map[string]Run) float64 { return float64(rs[arm].SLOViolations[k]) }))
		if err != nil {
			return nil, err
		}
		q := "–"
		if kind, _, err := parseExtra(arm); err == nil && (kind == bcqPrefix || kind == OfflineDDPG) {
			e, err := bs.Mean(values(func(rs map[string]Run) float64 { return rs[arm].OfflineMeanQ }))
			if err != nil {
				return nil, err
			}
			q = e.String()
		}
		t.Rows = append(t.Rows, []string{arm, fmt.Sprint(k + 1), rew.String(), vio.String(), q})
	}
	t.Notes = []string{fmt.Sprintf("T_online, the reward at which Algorithm 1 lets the agent act, is here the fallback's own mean episode reward over the records. The critics' mean Q: with γ = 0.99 and about %.2f reward per step in the records, a converged critic's is near %.0f; %s's is not recorded (%s gives it).",
		tOnline.Value/100, tOnline.Value, AWARE, BCQArm(c.Phi))}
	tables := []study.Table{t}
	if !slices.Contains(c.Extra, PPOFitted) {
		return tables, nil
	}
	ft := study.Table{Title: fmt.Sprintf("The simulators %s trained in (%d episodes each), fitted from the recorded metrics", PPOFitted, c.SimEpisodes),
		Columns: []string{"application", "CPU", "memory", "p50", "p95", "p99", "steps (CPU / memory / latency)", "CPU/request fitted / true", "isolated p99 fitted / true", "in the fitted simulator, last 10 episodes: reward / SLO violations"}}
	pct := func(x float64, rows int) string {
		if rows == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f %%", 100*x)
	}
	for _, a := range apps {
		f := byApp[a][PPOFitted].Fit
		if f == nil {
			return nil, fmt.Errorf("bootstrapping: %s: the %s cell holds no fit", a, PPOFitted)
		}
		e := f.HeldBack
		n := len(f.SimRewards)
		last, vio := 0.0, 0.0
		for i := max(0, n-10); i < n; i++ {
			last += f.SimRewards[i] / float64(min(10, n))
			vio += float64(f.SimSLOViolations[i]) / float64(min(10, n))
		}
		ft.Rows = append(ft.Rows, []string{a, pct(e.CPU, e.CPURows), pct(e.Memory, e.MemoryRows), pct(e.LatencyP50, e.LatencyRows), pct(e.LatencyP95, e.LatencyRows), pct(e.LatencyP99, e.LatencyRows),
			fmt.Sprintf("%d / %d / %d", e.CPURows, e.MemoryRows, e.LatencyRows), fmt.Sprintf("%.3f", f.Fitted.Model.CPU/f.TrueCPU), fmt.Sprintf("%.3f", f.Fitted.Model.P99/f.TrueP99), fmt.Sprintf("%.1f / %.1f", last, vio)})
	}
	ft.Notes = []string{"Median relative error of the predictions on the last fifth of the records, held back from a fit on the first four fifths (steps usable for each part); the agent's simulator is fitted on all of them."}
	return append(tables, ft), nil
}
