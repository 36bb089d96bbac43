package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/floats"

	"github.com/aware-autoscaler/aware/controller/meta"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/controller/rl/agent/ddpg"
	"github.com/aware-autoscaler/aware/controller/transfer"
	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/train"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/workloads/calibration"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// metaAdaptFlags are the flags of `aware meta adapt`.
type metaAdaptFlags struct {
	poolFlags
	from, out              string
	apps, episodes, source int
	m                      int
	seed                   uint64
	window                 int
	tolerance              float64
	noise                  float64
	mapping                gym.Mapping // the meta run's
}

// The adaptation methods, in table order.
const (
	methodAWARE = "AWARE"
	methodTL    = "TL"
	methodTLP   = "TL+"
)

var adaptMethods = []string{methodAWARE, methodTL, methodTLP}

func newMetaAdaptCmd() *cobra.Command {
	fl := metaAdaptFlags{apps: 10, episodes: 60, source: 100, m: 20, noise: metaNoise}
	rule := train.DefaultConvergence()
	fl.window, fl.tolerance = rule.Window, rule.Tolerance
	cmd := &cobra.Command{
		Use:   "adapt",
		Short: "Adapt to held-out applications: AWARE against transfer learning (TL, TL+)",
		Long: `Measures how fast each method adapts to the first --apps applications of the pool's test
split (never trained on), each with the same budget of --episodes training episodes reset
with the same seeds (paper §5.2):

  AWARE  the DDPG agent of an aware meta train run (--from) keeps training on the new
         application, conditioned on the embedding that the frozen meta learner computes
         before each episode from the application's own best recent episodes;
  TL     a DDPG agent trained for --source episodes on one train-split application drawn
         from --seed, its weights copied and fine-tuned on the new one;
  TL+    TL whose state also holds a seasonal AR load forecast (least squares on log
         rates, controller/forecast) and a table of allocation → measured performance
         (controller/transfer).

Convergence: a method has converged on an application at the first episode from which on
the trailing --window episodes' mean reward stays within --tolerance of the converged
policy's, taken as the best final mean (last --window episodes) of the three methods on
that application; a method that never stays there counts the whole budget (censored, and
marked). Reported per application and as medians, with the ratios of the paper's Table
(AWARE 5.5× faster than TL, 4.6× than TL+).

Writes adapt.md and adapt.json into --out (default: --from/adapt).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMetaAdapt(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.from, "from", "out/meta", "folder of an aware meta train run")
	f.StringVar(&fl.out, "out", "", "report folder (default: --from/adapt)")
	f.IntVar(&fl.apps, "apps", fl.apps, "test-split applications to adapt to")
	f.IntVar(&fl.episodes, "episodes", fl.episodes, "training episodes per method and application")
	f.IntVar(&fl.source, "source-episodes", fl.source, "episodes TL's and TL+'s source policies train on their application")
	f.IntVar(&fl.m, "m", fl.m, "trajectories per bundle the meta run was trained with")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of the episodes, the source application and the TL agents")
	fl.poolFlags.register(f)
	f.IntVar(&fl.window, "window", fl.window, "episodes of the convergence rule's trailing mean")
	f.Float64Var(&fl.tolerance, "tolerance", fl.tolerance, "relative distance to the converged policy's reward that counts as converged")
	f.Float64Var(&fl.noise, "noise", fl.noise, "standard deviation of every method's Gaussian exploration noise (FIRM's is 0.2)")
	return cmd
}

// adaptRun is one method on one application in adapt.json.
type adaptRun struct {
	Rewards       []float64 `json:"rewards"`
	SLOViolations []int     `json:"sloViolations"`
	CPUUtil       []float64 `json:"cpuUtil"`
	MemoryUtil    []float64 `json:"memoryUtil"`
	Final         float64   `json:"finalReward"`
	Converged     int       `json:"episodesToConverge"`
	Censored      bool      `json:"censored,omitempty"`
	Seconds       float64   `json:"seconds"`
}

// adaptApp is one application in adapt.json.
type adaptApp struct {
	Name      string              `json:"name"`
	Reference float64             `json:"convergedReward"`
	Methods   map[string]adaptRun `json:"methods"`
}

// adaptReport is adapt.json.
type adaptReport struct {
	Meta      string                 `json:"metaCheckpoint"`
	Rounds    int                    `json:"metaRounds"`
	Source    string                 `json:"tlSource"`
	Episodes  int                    `json:"episodes"`
	Seed      uint64                 `json:"seed"`
	Noise     float64                `json:"explorationNoise"`
	Actions   string                 `json:"actions"`
	Rule      train.ConvergenceRule  `json:"convergence"`
	Apps      []adaptApp             `json:"apps"`
	Median    map[string]float64     `json:"medianEpisodesToConverge"`
	Ratio     map[string]float64     `json:"ratioToAWARE"`
	Censored  map[string]int         `json:"censored"`
	Summaries map[string]train.Score `json:"meanOverEpisodes"`
	// Early is the mean reward of each method's first Rule.Window
	// episodes, over the applications: how well it does before it adapts.
	Early map[string]float64 `json:"meanRewardFirstWindow"`
}

func runMetaAdapt(ctx context.Context, out, progress io.Writer, fl metaAdaptFlags) error {
	rule := train.ConvergenceRule{Window: fl.window, Tolerance: fl.tolerance}
	if fl.apps < 1 || fl.source < 1 || fl.episodes < fl.window || fl.window < 1 || !(fl.tolerance >= 0) || fl.step <= 0 {
		return fmt.Errorf("--apps %d and --source-episodes %d must be positive, --episodes %d at least --window %d (positive), --tolerance %v not negative, --step %s positive",
			fl.apps, fl.source, fl.episodes, fl.window, fl.tolerance, fl.step)
	}
	if fl.out == "" {
		fl.out = filepath.Join(fl.from, "adapt")
	}
	cfg := meta.DefaultConfig(gym.StateDim + gym.ActDim + 1)
	metaAgent, f, err := lab.NewMetaLearners(cfg, fl.m, fl.seed, paperMetaLR)
	if err != nil {
		return err
	}
	rounds, mapping, err := train.LoadMetaTrain(fl.from, metaAgent, f)
	if err != nil {
		return err
	}
	f.SetMetaUpdates(false)
	fl.mapping = mapping
	if err := os.MkdirAll(fl.out, 0o755); err != nil {
		return err
	}
	opts := meta.DefaultOptions(100)
	opts.M = fl.m

	prof, apps, simApps, err := splitApps(generator.SplitTest, fl.apps, fl.poolSize, fl.poolSeed, fl.traces, fl.step, fl.seed)
	if err != nil {
		return err
	}
	newEnv := func(a sim.App) (gym.Env, error) { return sim.NewEnv(prof, a, sim.WithStep(fl.step)) }

	// TL's and TL+'s source: one train-split application drawn from the seed.
	_, trainApps, trainSim, err := splitApps(generator.SplitTrain, 0, fl.poolSize, fl.poolSeed, fl.traces, fl.step, fl.seed)
	if err != nil {
		return fmt.Errorf("TL source: %w", err)
	}
	k := rand.New(rand.NewPCG(fl.seed, 0x7150)).IntN(len(trainApps))
	src := trainSim[k]
	fmt.Fprintf(out, "adapting to %d test-split applications, %d episodes each; TL and TL+ from %s (%d episodes); AWARE from %s (%d rounds)\n",
		len(apps), fl.episodes, trainApps[k].Name(), fl.source, fl.from, rounds)
	b := newBar(progress, "adapt", 2*fl.source+len(apps)*len(adaptMethods)*fl.episodes)
	done := 0
	tick := func(train.Episode) { done++; b.set(done) }
	tl, err := sourcePolicy(ctx, prof, src, false, fl, tick)
	if err != nil {
		return fmt.Errorf("TL source: %w", err)
	}
	tlPlus, err := sourcePolicy(ctx, prof, src, true, fl, tick)
	if err != nil {
		return fmt.Errorf("TL+ source: %w", err)
	}

	rep := adaptReport{Meta: filepath.Join(fl.from, train.MetaCheckpoint), Rounds: rounds, Source: trainApps[k].Name(), Episodes: fl.episodes, Seed: fl.seed, Noise: fl.noise, Actions: fl.mapping.String(), Rule: rule,
		Median: map[string]float64{}, Ratio: map[string]float64{}, Censored: map[string]int{}, Summaries: map[string]train.Score{}, Early: map[string]float64{}}
	all := map[string][]train.Episode{}
	for i, a := range simApps {
		app := adaptApp{Name: apps[i].Name(), Methods: map[string]adaptRun{}}
		seed := fl.seed + 1000*uint64(i+1)
		for _, method := range adaptMethods {
			start := time.Now()
			env, err := newEnv(a)
			if err != nil {
				return fmt.Errorf("%s: %w", app.Name, err)
			}
			var eps []train.Episode
			switch method {
			case methodAWARE:
				ag, _, err := lab.NewMetaLearners(cfg, fl.m, fl.seed, paperMetaLR, ddpg.WithGaussianNoise(fl.noise))
				if err != nil {
					return err
				}
				if err := transfer.Copy(ag, metaAgent, fl.out); err != nil {
					return err
				}
				eps, err = train.Adapt(ctx, env, app.Name, ag, f.Embedder(), opts, train.AdaptConfig{Episodes: fl.episodes, Seed: seed, Mapping: fl.mapping, Progress: tick})
				if err != nil {
					return fmt.Errorf("%s: AWARE: %w", app.Name, err)
				}
			case methodTL, methodTLP:
				source := tl
				if method == methodTLP {
					source = tlPlus
					if env, err = lab.PlusEnv(env); err != nil {
						return err
					}
				}
				ag, err := ddpg.New(env.ObservationSpace().Dim(), gym.ActDim, rand.New(rand.NewPCG(fl.seed+7, 0x71)), ddpg.WithGaussianNoise(fl.noise))
				if err != nil {
					return err
				}
				if err := transfer.Copy(ag, source, fl.out); err != nil {
					return err
				}
				eps, err = train.Run(ctx, env, ag, train.Config{Episodes: fl.episodes, Seed: seed, Explore: true, Mapping: fl.mapping, Progress: tick})
				if err != nil {
					return fmt.Errorf("%s: %s: %w", app.Name, method, err)
				}
			}
			run := adaptRun{Seconds: time.Since(start).Seconds()}
			for _, e := range eps {
				run.Rewards = append(run.Rewards, e.Reward)
				run.SLOViolations = append(run.SLOViolations, e.SLOViolations)
				run.CPUUtil = append(run.CPUUtil, e.CPUUtil)
				run.MemoryUtil = append(run.MemoryUtil, e.MemoryUtil)
			}
			if run.Final, err = rule.Final(run.Rewards); err != nil {
				return err
			}
			app.Methods[method] = run
			all[method] = append(all[method], eps...)
		}
		app.Reference = app.Methods[methodAWARE].Final
		for _, r := range app.Methods {
			app.Reference = max(app.Reference, r.Final)
		}
		for m, r := range app.Methods {
			n, ok, err := rule.Episodes(r.Rewards, app.Reference)
			if err != nil {
				return err
			}
			r.Converged, r.Censored = n, !ok
			app.Methods[m] = r
		}
		rep.Apps = append(rep.Apps, app)
	}
	b.done()
	for _, m := range adaptMethods {
		var n []float64
		for _, a := range rep.Apps {
			n = append(n, float64(a.Methods[m].Converged))
			if a.Methods[m].Censored {
				rep.Censored[m]++
			}
		}
		rep.Median[m] = median(n)
		rep.Summaries[m] = train.Summarise(all[m])
		for _, a := range rep.Apps {
			first := a.Methods[m].Rewards[:rule.Window]
			rep.Early[m] += floats.Sum(first) / float64(len(first)*len(rep.Apps))
		}
	}
	for _, m := range adaptMethods[1:] {
		rep.Ratio[m] = rep.Median[m] / rep.Median[methodAWARE]
	}
	md := adaptMarkdown(rep)
	fmt.Fprint(out, md)
	return writeReport(fl.out, "adapt.md", md, "adapt.json", rep)
}

// sourcePolicy trains TL's (plus: TL+'s) source DDPG agent on app from
// scratch for fl.source episodes.
func sourcePolicy(ctx context.Context, prof *calibration.Profile, app sim.App, plus bool, fl metaAdaptFlags, tick func(train.Episode)) (agent.Agent, error) {
	var env gym.Env
	env, err := sim.NewEnv(prof, app, sim.WithStep(fl.step))
	if err != nil {
		return nil, err
	}
	if plus {
		if env, err = lab.PlusEnv(env); err != nil {
			return nil, err
		}
	}
	ag, err := ddpg.New(env.ObservationSpace().Dim(), gym.ActDim, rand.New(rand.NewPCG(fl.seed+3, 0x71)), ddpg.WithGaussianNoise(fl.noise))
	if err != nil {
		return nil, err
	}
	_, err = train.Run(ctx, env, ag, train.Config{Episodes: fl.source, Seed: fl.seed + 500, Explore: true, Mapping: fl.mapping, Progress: tick})
	return ag, err
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func adaptMarkdown(r adaptReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Adaptation to %d held-out applications, %d training episodes per method, seed %d, exploration noise σ = %g, %s actions. AWARE: %s after %d rounds; TL and TL+ from %s.\n\n",
		len(r.Apps), r.Episodes, r.Seed, r.Noise, r.Actions, r.Meta, r.Rounds, r.Source)
	fmt.Fprintf(&b, "Converged: from the first episode on which the trailing %d episodes' mean reward stays within %.0f %% of the best final mean of the three methods on that application (* never: the budget is counted).\n\n",
		r.Rule.Window, 100*r.Rule.Tolerance)
	fmt.Fprintf(&b, "| application | converged reward | %s |\n|---|---:|%s\n", strings.Join(adaptMethods, " | "), strings.Repeat("---:|", len(adaptMethods)))
	for _, a := range r.Apps {
		fmt.Fprintf(&b, "| %s | %.1f |", a.Name, a.Reference)
		for _, m := range adaptMethods {
			run := a.Methods[m]
			mark := ""
			if run.Censored {
				mark = "*"
			}
			fmt.Fprintf(&b, " %d%s (final %.1f) |", run.Converged, mark, run.Final)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n| method | median episodes to converge | never converged | AWARE faster by | paper | mean reward, first %d episodes | mean reward | SLO violations / episode | CPU util | memory util |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", r.Rule.Window)
	paper := map[string]string{methodTL: "5.5×", methodTLP: "4.6×"}
	for _, m := range adaptMethods {
		ratio, p := "", ""
		if m != methodAWARE {
			ratio, p = fmt.Sprintf("%.2f×", r.Ratio[m]), paper[m]
		}
		s := r.Summaries[m]
		fmt.Fprintf(&b, "| %s | %.1f | %d of %d | %s | %s | %.1f | %.1f | %.1f | %.0f %% | %.0f %% |\n", m, r.Median[m], r.Censored[m], len(r.Apps), ratio, p,
			r.Early[m], s.Reward, s.SLOViolations, 100*s.CPUUtil, 100*s.MemoryUtil)
	}
	return b.String()
}
