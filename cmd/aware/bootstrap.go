package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/controller/bootstrap"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ppo"
	"github.com/aware-autoscaler/aware/evaluation/baselines"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// bootstrapFlags are the flags of `aware bootstrap`.
type bootstrapFlags struct {
	poolFlags
	apps, episodes, records, updates int
	simEpisodes, workers             int
	seed                             uint64
	out                              string
	phis                             []float64
	mapping                          gym.Mapping
}

// The arms of the bootstrapping study; BCQ's are named by bcqArm.
const (
	armRule    = "rule-based (HPA+VPA)"
	armNone    = "no bootstrapping (DDPG)"
	armOffline = "bootstrapped: plain offline DDPG"
	armNonePPO = "no bootstrapping (PPO)"
	armFitted  = "bootstrapped: PPO on the fitted simulator"
)

func bcqArm(phi float64) string { return fmt.Sprintf("bootstrapped: BCQ Φ=%g", phi) }

// offlineArms are the arms that train a DDPG-style agent on the records.
func offlineArms(phis []float64) []string {
	var out []string
	for _, p := range phis {
		out = append(out, bcqArm(p))
	}
	return append(out, armOffline)
}

// bootstrapArms are the arms in table order; the PPO pair when ppo.
func bootstrapArms(phis []float64, ppo bool) []string {
	out := append([]string{armRule, armNone}, offlineArms(phis)...)
	if ppo {
		out = append(out, armNonePPO, armFitted)
	}
	return out
}

func newBootstrapCmd() *cobra.Command {
	fl := bootstrapFlags{apps: 10, episodes: 200, records: 20, updates: 5000, simEpisodes: 1500, workers: 2, phis: []float64{0, 0.05}}
	cmd := &cobra.Command{
		Use:   "bootstrap",
		Short: "Measure bootstrapping: the first episodes of a new application with and without it",
		Long: `Runs the first --episodes episodes of the life of each of the first --apps applications of the
pool's test split on the simulator, six ways, each episode reset with the same seed:

  rule-based            HPA+VPA with the application's tuned CPU target throughout;
  no bootstrapping      a fresh DDPG agent acts and trains from the first episode;
  BCQ                   OFFLINE for the first --records episodes: HPA+VPA acts and every step
                        is recorded; a BCQ agent (controller/bootstrap) trains on the records
                        alone (--updates updates), then acts and keeps training; one arm per
                        perturbation bound in --phi (0: the project's default; 0.05: the
                        BCQ paper's);
  plain offline DDPG    the same, with DDPG trained on the same records instead of BCQ;
  no bootstrapping (PPO)  a fresh PPO agent (Gaussian head) acts and trains from the first
                        episode;
  PPO on the fitted simulator  OFFLINE as above; a simulator of the application is fitted
                        from the recorded metrics (workloads/sim.Fit: CPU per request,
                        working set, service-time quantiles; load replaying the recorded
                        arrivals), a fresh PPO agent trains in it for --sim-episodes episodes
                        (random start points in the recorded load), then acts and keeps
                        training. The fit's error is measured on the last fifth of the
                        records, held back from a fit on the first four fifths (the agent's
                        simulator is then fitted on all of them). --sim-episodes 0 leaves
                        both PPO arms out.

T_online, the reward at which the paper's Algorithm 1 lets the agent act, is the fallback's own
mean episode reward over the records; the report prints it with each arm's reward at the
switch. Reported per arm, mean over applications: reward and SLO violations per episode over
the first 10, 50 and all episodes, and the agents' rewards in their first acting episode.

Writes report.md and results.json into --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBootstrap(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), fl)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.apps, "apps", fl.apps, "test-split applications")
	f.IntVar(&fl.episodes, "episodes", fl.episodes, "episodes of each application's life")
	f.IntVar(&fl.records, "records", fl.records, "episodes the fallback acts and is recorded in before a bootstrapped agent acts")
	f.IntVar(&fl.updates, "updates", fl.updates, "offline training updates on the records")
	f.IntVar(&fl.simEpisodes, "sim-episodes", fl.simEpisodes, "episodes PPO trains in the fitted simulator before it acts (0: no PPO arms)")
	f.IntVar(&fl.workers, "workers", fl.workers, "applications run in parallel")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the episodes and the agents")
	fl.poolFlags.register(f)
	f.StringVar(&fl.out, "out", "out/bootstrap", "report folder")
	f.Float64SliceVar(&fl.phis, "phi", fl.phis, "BCQ perturbation bounds Φ, one arm each")
	actionsFlag(f, &fl.mapping)
	return cmd
}

// bootstrapArm is one arm on one application in results.json.
type bootstrapArm struct {
	Rewards       []float64 `json:"rewards"`
	SLOViolations []int     `json:"sloViolations"`
	// SwitchReward is the reward of the agent's first acting episode
	// (bootstrapped arms: the episode after the records).
	SwitchReward float64 `json:"switchReward"`
	// SwitchAllocation is the mean allocation of that episode (the
	// rule-based arm: of its episode at the switch): replicas, CPU cores
	// and memory MiB per pod.
	SwitchAllocation [3]float64 `json:"switchAllocation"`
	// OfflineMeanQ is the critic's mean value of the recorded actions
	// after offline training (bootstrapped arms).
	OfflineMeanQ float64 `json:"offlineMeanQ,omitempty"`
	// SimRewards are the rewards of the episodes in the fitted simulator
	// (the PPO arm on it).
	SimRewards       []float64 `json:"simRewards,omitempty"`
	SimSLOViolations []int     `json:"simSloViolations,omitempty"`
}

// bootstrapFit is the fitted simulator of one application in
// results.json: its error on the held-back records, the model the agent
// trained in, and the true model's CPU per request and p99 for comparison.
type bootstrapFit struct {
	HeldBack sim.FitError `json:"heldBack"`
	Fitted   sim.Fitted   `json:"fitted"`
	TrueCPU  float64            `json:"trueCPUPerRequest"`
	TrueP99  float64            `json:"trueIsolatedP99"`
}

// bootstrapApp is one application in results.json.
type bootstrapApp struct {
	Name      string                  `json:"name"`
	CPUTarget float64                 `json:"hpaTarget"`
	TOnline   float64                 `json:"tOnline"`
	Arms      map[string]bootstrapArm `json:"arms"`
	Fit       *bootstrapFit           `json:"fit,omitempty"`
}

// bootstrapReport is results.json.
type bootstrapReport struct {
	Episodes int            `json:"episodes"`
	Records  int            `json:"records"`
	Updates  int            `json:"offlineUpdates"`
	SimEps   int            `json:"simEpisodes"`
	Seed     uint64         `json:"seed"`
	Phis     []float64      `json:"bcqPhis"`
	Actions  string         `json:"actions"`
	Apps     []bootstrapApp `json:"apps"`
}

func runBootstrap(ctx context.Context, out, progress io.Writer, fl bootstrapFlags) error {
	for _, p := range fl.phis {
		if !(p >= 0 && p <= 2) {
			return fmt.Errorf("--phi %g: a perturbation bound is in [0, 2]", p)
		}
	}
	if fl.simEpisodes < 0 {
		return fmt.Errorf("--sim-episodes %d must not be negative", fl.simEpisodes)
	}
	if fl.apps < 1 || fl.records < 1 || fl.updates < 1 || fl.workers < 1 || fl.episodes <= fl.records || fl.step <= 0 {
		return fmt.Errorf("--apps %d, --records %d, --updates %d, --workers %d and --step %s must be positive and --episodes %d above --records",
			fl.apps, fl.records, fl.updates, fl.workers, fl.step, fl.episodes)
	}
	prof, apps, simApps, err := splitApps(generator.SplitTest, fl.apps, fl.poolSize, fl.poolSeed, fl.traces, fl.step, fl.seed)
	if err != nil {
		return err
	}
	if err := tuneApps(ctx, prof, apps, simApps, fl.step, fl.seed); err != nil {
		return err
	}
	fmt.Fprintf(out, "bootstrapping on %d test-split applications: %d episodes each, the first %d recorded from HPA+VPA for the bootstrapped arms, %d offline updates\n",
		len(apps), fl.episodes, fl.records, fl.updates)
	rep := bootstrapReport{Episodes: fl.episodes, Records: fl.records, Updates: fl.updates, SimEps: fl.simEpisodes, Seed: fl.seed, Phis: fl.phis, Actions: fl.mapping.String(), Apps: make([]bootstrapApp, len(apps))}
	perApp := 2*fl.episodes + (1+len(fl.phis))*(fl.episodes-fl.records)
	if fl.simEpisodes > 0 {
		perApp += fl.episodes + fl.simEpisodes + fl.episodes - fl.records
	}
	b := newBar(progress, "bootstrap", len(apps)*perApp)
	var (
		mu   sync.Mutex
		done int
	)
	tick := func(train.Episode) {
		mu.Lock()
		done++
		b.set(done)
		mu.Unlock()
	}
	err = train.Each(ctx, len(apps), fl.workers, func(i int) error {
		var err error
		if rep.Apps[i], err = bootstrapOne(ctx, apps[i], simApps[i], prof, fl, uint64(i), tick); err != nil {
			return fmt.Errorf("%s: %w", apps[i].Name(), err)
		}
		return nil
	})
	b.done()
	if err != nil {
		return err
	}
	md := bootstrapMarkdown(rep)
	fmt.Fprint(out, md)
	return writeReport(fl.out, "report.md", md, "results.json", rep)
}

// writeReport writes a study's report into dir (made if missing): md into
// the file mdName and v, indented JSON, into jsonName.
func writeReport(dir, mdName, md, jsonName string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, mdName), []byte(md), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, jsonName), js, 0o644)
}

// bootstrapOne runs the four arms on one application (index k of the
// study, for its seeds).
func bootstrapOne(ctx context.Context, app generator.App, sa sim.App, prof *calibration.Profile, fl bootstrapFlags, k uint64, tick func(train.Episode)) (bootstrapApp, error) {
	res := bootstrapApp{Name: app.Name(), CPUTarget: app.Profile.Targets.CPU, Arms: map[string]bootstrapArm{}}
	seed := fl.seed + 10_000*(k+1)
	newEnv := func() (gym.Env, error) { return sim.NewEnv(prof, sa, sim.WithStep(fl.step)) }
	arm := func(eps []train.Episode, agentFrom int) bootstrapArm {
		var a bootstrapArm
		for _, e := range eps {
			a.Rewards = append(a.Rewards, e.Reward)
			a.SLOViolations = append(a.SLOViolations, e.SLOViolations)
		}
		e := eps[max(agentFrom, fl.records)]
		a.SwitchAllocation = [3]float64{e.Replicas, e.CPU, e.Memory / gym.MiB}
		if agentFrom >= 0 {
			a.SwitchReward = e.Reward
		}
		return a
	}

	// Rule-based throughout; its first episodes are the OFFLINE records.
	env, err := newEnv()
	if err != nil {
		return res, err
	}
	f, _ := baselines.Find("hpa+vpa")
	rec, err := f.NewFor(env.ActionSpace(), app.MinCPU, fl.step, app.Profile.Targets.CPU)
	if err != nil {
		return res, err
	}
	var metrics []gym.Metrics // what Prometheus reported in the records' steps
	observe := func(ep, _ int, info gym.Info) {
		if ep < fl.records {
			metrics = append(metrics, info.Metrics)
		}
	}
	rule, steps, err := train.Record(ctx, env, rec, fl.step, train.Config{Episodes: fl.episodes, Seed: seed, Mapping: fl.mapping, Progress: tick, Observe: observe})
	if err != nil {
		return res, fmt.Errorf("rule-based: %w", err)
	}
	res.Arms[armRule] = arm(rule, -1)
	n := 0
	for _, e := range rule[:fl.records] {
		n += e.Steps
		res.TOnline += e.Reward / float64(fl.records)
	}
	records := steps[:n]

	// Agents: fresh from the first episode, or after the records.
	online := func(name string, ag agent.Agent, from int) (bootstrapArm, error) {
		env, err := newEnv()
		if err != nil {
			return bootstrapArm{}, err
		}
		eps, err := train.Run(ctx, env, ag, train.Config{Episodes: fl.episodes - from, Seed: seed + uint64(from), Explore: true, Mapping: fl.mapping, Progress: tick})
		if err != nil {
			return bootstrapArm{}, fmt.Errorf("%s: %w", name, err)
		}
		return arm(append(append([]train.Episode(nil), rule[:from]...), eps...), from), nil
	}
	rnd := func(i uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, i)) }
	fresh, err := ddpg.New(gym.StateDim, gym.ActDim, rnd(1))
	if err != nil {
		return res, err
	}
	if res.Arms[armNone], err = online(armNone, fresh, 0); err != nil {
		return res, err
	}
	type offlineArm struct {
		name string
		ag   agent.Agent
	}
	var arms []offlineArm
	for _, phi := range fl.phis {
		bcq, err := bootstrap.New(gym.StateDim, gym.ActDim, rnd(2), bootstrap.WithPhi(phi))
		if err != nil {
			return res, err
		}
		arms = append(arms, offlineArm{bcqArm(phi), bcq})
	}
	plain, err := ddpg.New(gym.StateDim, gym.ActDim, rnd(3))
	if err != nil {
		return res, err
	}
	for _, a := range append(arms, offlineArm{armOffline, plain}) {
		st, err := bootstrap.Offline(ctx, a.ag, records, fl.updates, nil)
		if err != nil {
			return res, fmt.Errorf("%s: %w", a.name, err)
		}
		ba, err := online(a.name, a.ag, fl.records)
		if err != nil {
			return res, err
		}
		ba.OfflineMeanQ = st.MeanQ
		res.Arms[a.name] = ba
	}
	if fl.simEpisodes == 0 {
		return res, nil
	}

	// PPO: fresh, or trained first in a simulator fitted from the records.
	newPPO := func(i uint64) (agent.Agent, error) { return ppo.NewContinuous(gym.StateDim, gym.ActDim, rnd(i)) }
	ag, err := newPPO(4)
	if err != nil {
		return res, err
	}
	if res.Arms[armNonePPO], err = online(armNonePPO, ag, 0); err != nil {
		return res, err
	}
	fit, fitEnv, err := fittedSimulator(prof, sa, env.(*sim.AppEnv).Cluster().Model(0), metrics, fl.step)
	if err != nil {
		return res, fmt.Errorf("%s: %w", armFitted, err)
	}
	res.Fit = fit
	if ag, err = newPPO(5); err != nil {
		return res, err
	}
	simEps, err := train.Run(ctx, fitEnv, ag, train.Config{Episodes: fl.simEpisodes, Seed: seed + 7_000, Explore: true, Mapping: fl.mapping, Progress: tick})
	if err != nil {
		return res, fmt.Errorf("%s: in the fitted simulator: %w", armFitted, err)
	}
	ba, err := online(armFitted, ag, fl.records)
	if err != nil {
		return res, err
	}
	for _, e := range simEps {
		ba.SimRewards = append(ba.SimRewards, e.Reward)
		ba.SimSLOViolations = append(ba.SimSLOViolations, e.SLOViolations)
	}
	res.Arms[armFitted] = ba
	return res, nil
}

// fittedSimulator fits a simulator of application sa from metrics, the
// steps of its records: first on their first four fifths, measured on the
// last fifth, then on all of them for the environment returned (random
// start points in the recorded load). truth is sa's true model, reported
// beside the fit.
func fittedSimulator(prof *calibration.Profile, sa sim.App, truth sim.Model, metrics []gym.Metrics, step time.Duration) (*bootstrapFit, gym.Env, error) {
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
	return &bootstrapFit{HeldBack: part.Error(metrics[cut:], step), Fitted: f, TrueCPU: truth.CPU, TrueP99: truth.P99}, env, nil
}

// tOnline is the mean of the applications' T_online.
func tOnline(r bootstrapReport) float64 {
	t := 0.0
	for _, a := range r.Apps {
		t += a.TOnline / float64(len(r.Apps))
	}
	return t
}

// bootstrapMarkdown is report.md: per arm, means over the applications.
func bootstrapMarkdown(r bootstrapReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Bootstrapping on %d held-out applications: the first %d episodes of each, seed %d, %s actions; bootstrapped arms: HPA+VPA acts and is recorded for %d episodes, the agent trains on the records alone (%d updates) and then acts.\n\n",
		len(r.Apps), r.Episodes, r.Seed, r.Actions, r.Records, r.Updates)
	windows := []int{r.Episodes}
	for _, w := range []int{50, 10} {
		if w < r.Episodes {
			windows = append([]int{w}, windows...)
		}
	}
	fmt.Fprintf(&b, "| arm |")
	for _, w := range windows {
		fmt.Fprintf(&b, " reward, first %d | SLO violations / episode, first %d |", w, w)
	}
	fmt.Fprintf(&b, " reward of the first acting episode | T_online |\n|---|%s---:|---:|\n", strings.Repeat("---:|---:|", len(windows)))
	for _, name := range bootstrapArms(r.Phis, r.SimEps > 0) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, w := range windows {
			var rew, vio float64
			for _, a := range r.Apps {
				arm := a.Arms[name]
				k := min(w, len(arm.Rewards))
				for i := range k {
					rew += arm.Rewards[i] / float64(k*len(r.Apps))
					vio += float64(arm.SLOViolations[i]) / float64(k*len(r.Apps))
				}
			}
			fmt.Fprintf(&b, " %.1f | %.1f |", rew, vio)
		}
		sw, t := "", tOnline(r)
		if name != armRule {
			v := 0.0
			for _, a := range r.Apps {
				v += a.Arms[name].SwitchReward / float64(len(r.Apps))
			}
			sw = fmt.Sprintf("%.1f", v)
		}
		fmt.Fprintf(&b, " %s | %.1f |\n", sw, t)
	}
	fmt.Fprintf(&b, "\nThe offline critics' mean value of the recorded actions after the offline updates (with γ = 0.99 and about %.2f reward per step in the records, a converged critic's is near %.0f):", tOnline(r)/100, tOnline(r))
	for _, name := range offlineArms(r.Phis) {
		v := 0.0
		for _, a := range r.Apps {
			v += a.Arms[name].OfflineMeanQ / float64(len(r.Apps))
		}
		fmt.Fprintf(&b, " %s %.1f;", name, v)
	}
	b.WriteString("\n")
	if r.SimEps > 0 {
		b.WriteString(fitMarkdown(r))
	}
	return b.String()
}

// fitMarkdown is the report's section on the fitted simulators.
func fitMarkdown(r bootstrapReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe simulators PPO trained in (%d episodes each), fitted from the recorded metrics: median relative error of the predictions on the last fifth of the records, held back from a fit on the first four fifths (steps usable for each: CPU / memory / latency), and the fitted CPU per request and isolated p99 over the true ones.\n\n", r.SimEps)
	b.WriteString("| application | CPU | memory | p50 | p95 | p99 | steps | CPU/request fitted / true | isolated p99 fitted / true | reward / SLO violations in the fitted simulator, last 10 episodes |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	pct := func(x float64) string {
		if math.IsNaN(x) {
			return "–"
		}
		return fmt.Sprintf("%.1f %%", 100*x)
	}
	for _, a := range r.Apps {
		if a.Fit == nil {
			continue
		}
		e := a.Fit.HeldBack
		arm := a.Arms[armFitted]
		n := len(arm.SimRewards)
		last, vio := 0.0, 0.0
		for i := max(0, n-10); i < n; i++ {
			last += arm.SimRewards[i] / float64(min(10, n))
			vio += float64(arm.SimSLOViolations[i]) / float64(min(10, n))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d / %d / %d | %.3f | %.3f | %.1f / %.1f |\n", a.Name, pct(e.CPU), pct(e.Memory), pct(e.LatencyP50), pct(e.LatencyP95), pct(e.LatencyP99),
			e.CPURows, e.MemoryRows, e.LatencyRows, a.Fit.Fitted.Model.CPU/a.Fit.TrueCPU, a.Fit.Fitted.Model.P99/a.Fit.TrueP99, last, vio)
	}
	return b.String()
}
